// ExpertJob: one SwiGLU expert (or a dense MLP) and the tokens routed to it,
// the unit of work an ExpertComputer (common/inference/expert_compute.h) runs.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace dancemoe {

struct ExpertJob {
  kernels::WeightView gate;     // [inter, hidden]
  kernels::WeightView up;       // [inter, hidden]
  kernels::WeightView down;     // [hidden, inter]
  std::vector<int32_t> tokens;  // rows of x this expert serves
  std::vector<float> weights;   // gate weight per served token
  // Index of the device that holds the expert, into the computer's engines
  // (ExpertWeights::device for a resident expert; 0 for a dense MLP).
  int32_t device = 0;
};

}  // namespace dancemoe
