// ExpertJob: one SwiGLU expert (or a dense MLP) and the tokens routed to it,
// the unit of work an ExpertComputer (common/inference/expert_compute.h) runs.
// What an expert computes for a token x:
//   g = gate x + gate_bias,  u = up x + up_bias      (biases: gpt-oss, else 0)
//   y = down(act(g, u)) + down_bias
//   act = silu(g) * u, or gpt-oss's clamped SwiGLU (kernels.h, swiglu_clamped)
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace dancemoe {

// The parts of an expert beyond a plain SwiGLU; the defaults are plain. The
// biases are f32 and owned by whoever owns the weights (ExpertWeights).
struct ExpertFfn {
  bool clamped = false;  // the clamped SwiGLU with alpha and limit
  float alpha = 1.702f;
  float limit = 7.0f;
  const float* gate_bias = nullptr;  // [inter] or null
  const float* up_bias = nullptr;    // [inter] or null
  const float* down_bias = nullptr;  // [hidden] or null

  bool is_plain() const {
    return !clamped && gate_bias == nullptr && up_bias == nullptr && down_bias == nullptr;
  }
};

struct ExpertJob {
  kernels::WeightView gate;     // [inter, hidden]
  kernels::WeightView up;       // [inter, hidden]
  kernels::WeightView down;     // [hidden, inter]
  std::vector<int32_t> tokens;  // rows of x this expert serves
  std::vector<float> weights;   // gate weight per served token
  ExpertFfn ffn;
  // Index of the device that holds the expert, into the computer's engines
  // (ExpertWeights::device for a resident expert; 0 for a dense MLP).
  int32_t device = 0;
};

}  // namespace dancemoe
