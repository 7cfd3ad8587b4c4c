#include "common/inference/expert_compute.h"

#include <algorithm>
#include <chrono>

#include "kernels/kernels.h"

namespace dancemoe {
namespace {

using Clock = std::chrono::steady_clock;

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

}  // namespace

// One device: its engine, the jobs it got this run, where it accumulates,
// and -- for a synchronous engine that does not run on the caller's thread --
// the launcher thread that calls its begin().
struct ExpertComputer::Device {
  std::unique_ptr<ExpertEngine> engine;
  std::vector<ExpertJob> jobs;  // this run's jobs (element buffers reused)
  size_t n_jobs = 0;
  std::vector<float> partial;  // [n_tokens, hidden] when not writing into out
  float* target = nullptr;
  bool launched = false;  // this run went to the launcher thread
  Clock::time_point started;

  // Launcher: runs engine->begin() off the caller's thread.
  std::thread thread;
  std::mutex mutex;
  std::condition_variable wake;
  bool work = false;  // guarded by mutex: a run is waiting to be done
  bool done = false;  // guarded by mutex: the run has finished
  bool stop = false;  // guarded by mutex
  const float* x = nullptr;
  int64_t n_tokens = 0;
  int64_t hidden = 0;
  double elapsed_us = 0;

  void launcher_loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      wake.wait(lock, [&] { return work || stop; });
      if (stop) return;
      work = false;
      lock.unlock();
      const Clock::time_point start = Clock::now();
      engine->begin(std::span<const ExpertJob>(jobs.data(), n_jobs), x, n_tokens, hidden, target);
      engine->finish();
      const double us = micros_since(start);
      lock.lock();
      elapsed_us = us;
      done = true;
      wake.notify_all();
    }
  }
};

namespace {

std::vector<std::unique_ptr<ExpertEngine>> one_engine(std::unique_ptr<ExpertEngine> engine) {
  std::vector<std::unique_ptr<ExpertEngine>> engines;
  engines.push_back(std::move(engine));
  return engines;
}

}  // namespace

ExpertComputer::ExpertComputer(std::unique_ptr<ExpertEngine> engine)
    : ExpertComputer(one_engine(std::move(engine))) {}

ExpertComputer::ExpertComputer(std::vector<std::unique_ptr<ExpertEngine>> engines) {
  for (auto& engine : engines) {
    auto device = std::make_unique<Device>();
    device->engine = std::move(engine);
    devices_.push_back(std::move(device));
  }
  last_device_us_.assign(devices_.size(), 0.0);
}

ExpertComputer::~ExpertComputer() {
  if (pending_) finish();
  for (auto& d : devices_) {
    if (!d->thread.joinable()) continue;
    {
      std::lock_guard<std::mutex> lock(d->mutex);
      d->stop = true;
    }
    d->wake.notify_all();
    d->thread.join();
  }
}

ComputePrecision ExpertComputer::precision() const { return devices_.front()->engine->precision(); }

std::string ExpertComputer::describe() const {
  std::string text;
  for (const auto& d : devices_) {
    if (!text.empty()) text += " + ";
    text += d->engine->describe();
  }
  return text;
}

void ExpertComputer::begin(std::span<const ExpertJob> jobs, const float* x, int64_t n_tokens,
                           int64_t hidden, float* out) {
  std::fill(last_device_us_.begin(), last_device_us_.end(), 0.0);
  if (devices_.size() == 1) {
    Device& d = *devices_.front();
    d.started = Clock::now();
    d.engine->begin(jobs, x, n_tokens, hidden, out);
    d.n_jobs = jobs.empty() ? 0 : 1;
    d.target = out;
    pending_ = true;
    out_ = out;
    return;
  }
  // Split the jobs by device, keeping their order within a device.
  for (auto& d : devices_) {
    d->n_jobs = 0;
    d->launched = false;
  }
  for (const ExpertJob& job : jobs) {
    const size_t idx =
        std::clamp<size_t>(static_cast<size_t>(std::max(job.device, 0)), 0, devices_.size() - 1);
    Device& d = *devices_[idx];
    if (d.jobs.size() <= d.n_jobs) d.jobs.emplace_back();
    ExpertJob& copy = d.jobs[d.n_jobs++];
    copy.gate = job.gate;
    copy.up = job.up;
    copy.down = job.down;
    copy.device = job.device;
    copy.ffn = job.ffn;
    copy.tokens.assign(job.tokens.begin(), job.tokens.end());
    copy.weights.assign(job.weights.begin(), job.weights.end());
  }
  out_ = out;
  n_tokens_ = n_tokens;
  hidden_ = hidden;
  pending_ = true;
  // Targets: the first device with work writes into out, the others into partials.
  bool out_taken = false;
  const size_t rows = static_cast<size_t>(n_tokens * hidden);
  for (auto& d : devices_) {
    if (d->n_jobs == 0) continue;
    if (!out_taken) {
      d->target = out;
      out_taken = true;
    } else {
      d->partial.assign(rows, 0.0f);
      d->target = d->partial.data();
    }
  }
  // Asynchronous engines enqueue first, then the synchronous ones other than
  // the one that runs here are handed to their launchers, then this thread
  // computes the remaining one.
  Device* here = nullptr;
  for (auto& d : devices_) {
    if (d->n_jobs == 0) continue;
    std::span<const ExpertJob> mine(d->jobs.data(), d->n_jobs);
    d->started = Clock::now();
    if (d->engine->asynchronous()) {
      d->engine->begin(mine, x, n_tokens, hidden, d->target);
    } else if (here == nullptr) {
      here = d.get();
    } else {
      if (!d->thread.joinable()) d->thread = std::thread([dev = d.get()] { dev->launcher_loop(); });
      std::lock_guard<std::mutex> lock(d->mutex);
      d->x = x;
      d->n_tokens = n_tokens;
      d->hidden = hidden;
      d->done = false;
      d->work = true;
      d->launched = true;
      d->wake.notify_all();
    }
  }
  if (here != nullptr) {
    here->engine->begin(std::span<const ExpertJob>(here->jobs.data(), here->n_jobs), x, n_tokens,
                        hidden, here->target);
  }
}

void ExpertComputer::finish() {
  if (!pending_) return;
  pending_ = false;
  if (devices_.size() == 1) {
    Device& d = *devices_.front();
    d.engine->finish();
    if (d.n_jobs > 0) last_device_us_[0] = micros_since(d.started);
    return;
  }
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  for (size_t i = 0; i < devices_.size(); ++i) {
    Device& d = *devices_[i];
    if (d.n_jobs == 0) continue;
    if (d.launched) {
      std::unique_lock<std::mutex> lock(d.mutex);
      d.wake.wait(lock, [&] { return d.done; });
      last_device_us_[i] = d.elapsed_us;
      continue;
    }
    d.engine->finish();
    last_device_us_[i] = micros_since(d.started);
  }
  for (auto& d : devices_) {
    if (d->n_jobs == 0 || d->target == out_) continue;
    const int64_t n = n_tokens_ * hidden_;
    k.axpy(1.0f, d->partial.data(), out_, n);
  }
}

}  // namespace dancemoe
