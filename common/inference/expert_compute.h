// ExpertComputer: runs a set of SwiGLU feed-forward experts over the tokens
// routed to them, each on the device that holds it, and adds each token's
// gate-weighted sum of expert outputs into an output matrix:
//
//   out[t] += sum_{j : t in job j} w_{j,t} * down_j( silu(gate_j x[t]) * up_j x[t] )
//
// It is the one place experts are computed: the local MoE layer, dense MLP
// layers (one job, weight 1) and -- in the node agent -- the expert service
// answering peers all use it. Where the work runs is one ExpertEngine per
// device (common/inference/expert_engine.h): the CPU kernels on a device's
// ThreadPool (common/backend/cpu/cpu_expert_engine.h), or a GPU. A job runs
// on engines[job.device]. Inputs and outputs are host memory either way.
//
// Devices run concurrently: begin() starts every device that has jobs --
// a GPU engine only enqueues, a CPU engine other than the first computes on
// a launcher thread of this computer (its own pool does the work) -- and
// finish() waits for all. The first device with jobs accumulates straight
// into `out`; every other device into a zeroed partial of its own, added to
// `out` in device order at finish(), so the result does not depend on which
// device finished first. With one device this is exactly its engine.
//
// begin()/finish() split run() for callers that have something to wait on
// meanwhile (a node's remote experts). x, out and the jobs must stay
// untouched until finish().
//
// Not thread-safe: one ExpertComputer per thread that runs forwards (each
// has its own engines; engines of one device may run side by side).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/inference/compute_precision.h"
#include "common/inference/expert_engine.h"
#include "common/inference/expert_job.h"

namespace dancemoe {

class ExpertComputer {
 public:
  // One device (index 0).
  explicit ExpertComputer(std::unique_ptr<ExpertEngine> engine);
  // engines[d] computes the jobs whose device is d; at least one.
  explicit ExpertComputer(std::vector<std::unique_ptr<ExpertEngine>> engines);
  ~ExpertComputer();
  ExpertComputer(const ExpertComputer&) = delete;
  ExpertComputer& operator=(const ExpertComputer&) = delete;

  int n_devices() const { return static_cast<int>(devices_.size()); }
  // The first device's: how activations enter matrix products.
  ComputePrecision precision() const;
  // "cpu (avx512, 2 threads)", or one entry per device joined with " + ".
  std::string describe() const;

  // x: [n_tokens, hidden]; out: [n_tokens, hidden], accumulated into.
  void run(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens, int64_t hidden,
           float* out) {
    begin(jobs, x, n_tokens, hidden, out);
    finish();
  }
  void begin(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens, int64_t hidden,
             float* out);
  void finish();

  // Wall time each device spent on the last run (begin to its completion),
  // in microseconds; 0 for a device that had no job. [n_devices]
  const std::vector<double>& last_device_us() const { return last_device_us_; }

 private:
  struct Device;

  std::vector<std::unique_ptr<Device>> devices_;
  std::vector<double> last_device_us_;
  float* out_ = nullptr;
  int64_t n_tokens_ = 0;
  int64_t hidden_ = 0;
  bool pending_ = false;
};

}  // namespace dancemoe
