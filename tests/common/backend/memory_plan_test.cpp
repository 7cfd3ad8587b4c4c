// The GPU backend's load-time memory plan, on described (not real) devices:
// where the dense part and every expert go, the budget check, and the
// out-of-memory error that names the device, the bytes wanted and the bytes
// free.
#include "common/backend/memory_plan.h"

#include <doctest/doctest.h>

#include <random>

namespace dancemoe::backend {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

PlanDevice device(int ordinal, uint64_t budget, uint64_t free_bytes) {
  return {ordinal,
          "cuda:" + std::to_string(ordinal) + " (Test GPU " + std::to_string(ordinal) + ")", budget,
          free_bytes};
}

PlanRequest two_gpus(int n_experts) {
  PlanRequest r;
  r.devices = {device(0, 100 * kMiB, 200 * kMiB), device(1, 100 * kMiB, 200 * kMiB)};
  r.sizes.dense_bytes = 20 * kMiB;
  r.sizes.expert_bytes = 2 * kMiB;
  r.sizes.kv_cache_bytes = 8 * kMiB;
  r.sizes.forward_workspace_bytes = 4 * kMiB;
  r.sizes.expert_workspace_bytes = 1 * kMiB;
  for (int e = 0; e < n_experts; ++e) r.resident.push_back({1 + e / 8, e % 8});
  r.device_text = "cuda:0,1";
  return r;
}

TEST_CASE("memory plan: the dense device holds the dense part, KV cache and workspace") {
  PlanRequest r = two_gpus(0);
  r.dense_index = 1;
  Result<MemoryPlan> plan = plan_memory(r);
  REQUIRE(plan.is_ok());
  CHECK(plan->devices[0].total_bytes() == 0);
  const DevicePlan& dense = plan->devices[1];
  CHECK(dense.dense_bytes == 20 * kMiB);
  CHECK(dense.kv_cache_bytes == 8 * kMiB);
  CHECK(dense.workspace_bytes == 4 * kMiB);  // no experts: no expert workspace
  CHECK(dense.total_bytes() == 32 * kMiB);
}

TEST_CASE("memory plan: without a placement experts fill the devices by room left") {
  PlanRequest r = two_gpus(32);
  Result<MemoryPlan> plan = plan_memory(r);
  REQUIRE(plan.is_ok());
  // cuda:0 starts 32 MiB fuller, so cuda:1 takes the first 16 experts, then
  // they alternate: 8 + 24.
  CHECK(plan->devices[0].n_experts == 8);
  CHECK(plan->devices[1].n_experts == 24);
  CHECK(plan->expert_index.size() == 32);
  CHECK(plan->expert_index[0] == 1);
  for (const DevicePlan& d : plan->devices) {
    CHECK(d.expert_bytes == static_cast<uint64_t>(d.n_experts) * 2 * kMiB);
    CHECK(d.workspace_bytes % kMiB == 0);
  }
  CHECK(plan->devices[1].workspace_bytes == 1 * kMiB);
  CHECK(plan->devices[0].workspace_bytes == 5 * kMiB);
  // The spread counts the smaller of budget and free memory.
  r.devices[1].free_bytes = 40 * kMiB;
  plan = plan_memory(r);
  REQUIRE(plan.is_ok());
  CHECK(plan->devices[1].n_experts < plan->devices[0].n_experts);
  CHECK(plan->devices[1].total_bytes() <= 40 * kMiB);
}

TEST_CASE("memory plan: a placement's device for each expert is honoured") {
  PlanRequest r = two_gpus(10);
  r.devices = {device(3, 100 * kMiB, 100 * kMiB), device(1, 100 * kMiB, 100 * kMiB)};
  r.device_text = "cuda:3,1";
  std::mt19937 rng(11);
  for (size_t i = 0; i < r.resident.size(); ++i) r.expert_ordinals.push_back(rng() % 2 ? 3 : 1);
  Result<MemoryPlan> plan = plan_memory(r);
  REQUIRE(plan.is_ok());
  int64_t on_3 = 0;
  for (size_t i = 0; i < r.resident.size(); ++i) {
    CAPTURE(i);
    const int index = plan->expert_index[i];
    CHECK(r.devices[static_cast<size_t>(index)].ordinal == r.expert_ordinals[i]);
    on_3 += r.expert_ordinals[i] == 3;
  }
  CHECK(on_3 > 0);
  CHECK(on_3 < 10);
  CHECK(plan->devices[0].n_experts == on_3);
  CHECK(plan->devices[1].n_experts == 10 - on_3);
  // Everything on the second device, even though the first has more room.
  r.expert_ordinals.assign(r.resident.size(), 1);
  plan = plan_memory(r);
  REQUIRE(plan.is_ok());
  CHECK(plan->devices[0].n_experts == 0);
  CHECK(plan->devices[1].n_experts == 10);
}

TEST_CASE("memory plan: a placement naming a device not selected is refused") {
  PlanRequest r = two_gpus(3);
  r.expert_ordinals = {0, 1, 2};
  Result<MemoryPlan> plan = plan_memory(r);
  REQUIRE_FALSE(plan.is_ok());
  CHECK(plan.status().code() == StatusCode::kInvalidArgument);
  CHECK(plan.status().message().find("expert 2 of layer 1 on device 2") != std::string::npos);
  CHECK(plan.status().message().find("cuda:0,1") != std::string::npos);
  r.expert_ordinals = {0, 1};
  plan = plan_memory(r);
  REQUIRE_FALSE(plan.is_ok());
  CHECK(plan.status().message().find("2 devices for 3 experts") != std::string::npos);
}

TEST_CASE("memory plan: out of memory names the device, the bytes wanted and the bytes free") {
  PlanRequest r = two_gpus(20);
  r.expert_ordinals.assign(20, 1);
  r.devices[1] = device(1, 30 * kMiB, 300 * kMiB);
  Result<MemoryPlan> plan = plan_memory(r);
  REQUIRE_FALSE(plan.is_ok());
  CHECK(plan.status().code() == StatusCode::kResourceExhausted);
  const std::string& m = plan.status().message();
  MESSAGE("OOM message: " << m);
  CHECK(m.rfind("cuda:1 (Test GPU 1)", 0) == 0);
  // 20 experts of 2 MiB + 1 MiB expert workspace.
  CHECK(m.find("wanted " + std::to_string(41 * kMiB) + " bytes") != std::string::npos);
  CHECK(m.find("20 experts") != std::string::npos);
  CHECK(m.find(std::to_string(300 * kMiB) + " bytes (300.0 MiB) free on the device") !=
        std::string::npos);
  CHECK(m.find("budget " + std::to_string(30 * kMiB) + " bytes") != std::string::npos);
  // Free memory, not only the budget, bounds the plan.
  r.devices[1] = device(1, 300 * kMiB, 40 * kMiB);
  plan = plan_memory(r);
  REQUIRE_FALSE(plan.is_ok());
  CHECK(plan.status().message().find(std::to_string(40 * kMiB) + " bytes (40.0 MiB) free") !=
        std::string::npos);
  // Exactly full fits.
  r.devices[1] = device(1, 41 * kMiB, 41 * kMiB);
  CHECK(plan_memory(r).is_ok());
}

TEST_CASE("memory plan: the dense device's parts count against its budget") {
  PlanRequest r = two_gpus(0);
  r.devices[0] = device(0, 31 * kMiB, 100 * kMiB);
  Result<MemoryPlan> plan = plan_memory(r);
  REQUIRE_FALSE(plan.is_ok());
  CHECK(plan.status().message().find("cuda:0 (Test GPU 0)") != std::string::npos);
  CHECK(plan.status().message().find("dense weights " + std::to_string(20 * kMiB)) !=
        std::string::npos);
  r.dense_index = 2;
  plan = plan_memory(r);
  REQUIRE_FALSE(plan.is_ok());
  CHECK(plan.status().code() == StatusCode::kInvalidArgument);
  r.devices.clear();
  r.dense_index = 0;
  CHECK(plan_memory(r).status().code() == StatusCode::kInvalidArgument);
}

// Every device holds its expert pointer tables beside the slots (the CUDA
// backend allocates them with the slots); a budget of exactly the experts'
// bytes plus the overheads fits, one byte less does not.
TEST_CASE("memory plan: the expert tables count on every device") {
  PlanRequest r = two_gpus(8);
  r.sizes.expert_table_bytes = 3 * 1024;
  r.expert_ordinals.assign(8, 0);
  Result<MemoryPlan> plan = plan_memory(r);
  REQUIRE(plan.is_ok());
  CHECK(plan->devices[0].expert_bytes == 8 * 2 * kMiB + 3 * 1024);
  CHECK(plan->devices[1].expert_bytes == 3 * 1024);  // no slots, the tables still
  const uint64_t need = 20 * kMiB + 8 * kMiB + 4 * kMiB + 1 * kMiB + 8 * 2 * kMiB + 3 * 1024;
  CHECK(plan->devices[0].total_bytes() == need);
  r.devices[0] = device(0, need, 200 * kMiB);
  CHECK(plan_memory(r).is_ok());
  r.devices[0] = device(0, need - 1, 200 * kMiB);
  CHECK(plan_memory(r).status().code() == StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace dancemoe::backend
