// The expert budget of every device, decided before any weight is read:
// what is free after the dense part, KV cache and workspace; explicit
// budgets checked against that; the node's total split over the rest.
#include "common/assembly/device_budgets.h"

#include <doctest/doctest.h>

namespace dancemoe {
namespace {

constexpr uint64_t kG = 1ull << 30;

DeviceCapacity cpu(const std::string& name, uint64_t available) {
  return {name, backend::DeviceKind::kCpu, 2 * available, available, std::nullopt};
}
DeviceCapacity gpu(const std::string& name, uint64_t available) {
  return {name, backend::DeviceKind::kCuda, available + kG, available, std::nullopt};
}

TEST_CASE("device budgets: CPU devices share the host, less the dense part and reservations") {
  BudgetRequest r;
  r.devices = {cpu("cpu:0", 30 * kG), cpu("cpu:1", 10 * kG)};
  r.dense_bytes = 2 * kG;
  r.kv_cache_bytes = kG;
  r.workspace_bytes = kG;
  r.host_reserved_bytes = 4 * kG;
  Result<std::vector<uint64_t>> b = plan_expert_budgets(r);
  REQUIRE(b.is_ok());
  // 8 GiB of host reservations, split 3:1 like the available memory.
  CHECK((*b)[0] == 24 * kG);
  CHECK((*b)[1] == 8 * kG);
}

TEST_CASE("device budgets: the GPU with the dense part pays for it, the host for its copy") {
  BudgetRequest r;
  r.devices = {gpu("cuda:0", 20 * kG), cpu("cpu", 64 * kG)};
  r.dense_device = 0;
  r.dense_bytes = 3 * kG;
  r.kv_cache_bytes = kG;
  r.host_reserved_bytes = 3 * kG;
  Result<std::vector<uint64_t>> b = plan_expert_budgets(r);
  REQUIRE(b.is_ok());
  CHECK((*b)[0] == 16 * kG);
  CHECK((*b)[1] == 61 * kG);
}

TEST_CASE("device budgets: --device-memory is kept, and refused above what is free") {
  BudgetRequest r;
  r.devices = {gpu("cuda:0", 20 * kG), cpu("cpu", 64 * kG)};
  r.dense_device = 0;
  r.dense_bytes = 4 * kG;
  r.devices[1].requested_bytes = 10 * kG;
  Result<std::vector<uint64_t>> b = plan_expert_budgets(r);
  REQUIRE(b.is_ok());
  CHECK((*b)[0] == 16 * kG);
  CHECK((*b)[1] == 10 * kG);
  r.devices[0].requested_bytes = 17 * kG;
  b = plan_expert_budgets(r);
  REQUIRE_FALSE(b.is_ok());
  CHECK(b.status().code() == StatusCode::kResourceExhausted);
  const std::string& m = b.status().message();
  CHECK(m.find("cuda:0: --device-memory asks for 18253611008 bytes") != std::string::npos);
  CHECK(m.find("17179869184 bytes") != std::string::npos);  // the 16 GiB free after the dense part
}

TEST_CASE("device budgets: a dense part that does not fit names the device, wanted and free") {
  BudgetRequest r;
  r.devices = {gpu("cuda:0", 4 * kG)};
  r.dense_device = 0;
  r.dense_bytes = 3 * kG;
  r.kv_cache_bytes = 2 * kG;
  Result<std::vector<uint64_t>> b = plan_expert_budgets(r);
  REQUIRE_FALSE(b.is_ok());
  const std::string& m = b.status().message();
  CHECK(m.find("cuda:0: the dense part does not fit") != std::string::npos);
  CHECK(m.find("5368709120 bytes") != std::string::npos);  // wanted
  CHECK(m.find("KV cache 2147483648 bytes") != std::string::npos);
  CHECK(m.find("4294967296 bytes") != std::string::npos);  // free
  BudgetRequest host;
  host.devices = {cpu("cpu", 2 * kG)};
  host.dense_bytes = 3 * kG;
  b = plan_expert_budgets(host);
  REQUIRE_FALSE(b.is_ok());
  CHECK(b.status().message().find("host memory") != std::string::npos);
}

TEST_CASE("device budgets: --expert-memory is split over the devices without their own") {
  BudgetRequest r;
  r.devices = {cpu("cpu:0", 12 * kG), cpu("cpu:1", 12 * kG), cpu("cpu:2", 24 * kG)};
  r.devices[2].requested_bytes = 2 * kG;
  r.node_expert_bytes = 8 * kG;
  Result<std::vector<uint64_t>> b = plan_expert_budgets(r);
  REQUIRE(b.is_ok());
  CHECK((*b)[0] == 3 * kG);
  CHECK((*b)[1] == 3 * kG);
  CHECK((*b)[2] == 2 * kG);
  r.node_expert_bytes = 100 * kG;
  b = plan_expert_budgets(r);
  REQUIRE_FALSE(b.is_ok());
  CHECK(b.status().message().find("--expert-memory asks for") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe
