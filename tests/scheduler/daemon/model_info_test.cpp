// ModelInfo's expert sizes follow what the nodes hold (issue 14): the first
// node's held sizes replace the model file's, later nodes can only raise a
// layer's size, and a node from before protocol 1.4 (no sizes) counts as
// holding the file's.
#include "scheduler/daemon/model_info.h"

#include <doctest/doctest.h>

namespace dancemoe::scheduler {
namespace {

TEST_CASE("model info: expert sizes are the bytes the admitted nodes hold") {
  ModelInfo m = ModelInfo::synthetic("m", 3, 4, 2, 1000);
  REQUIRE(m.shape.layers().size() == 3);
  // A quantized node: its sizes, smaller than the file's, are packed with.
  m.admit_expert_sizes({300, 300, 400});
  CHECK(m.shape.layers()[0].expert_bytes == 300);
  CHECK(m.shape.layers()[2].expert_bytes == 400);
  // A node holding more per expert raises them, never lowers.
  m.admit_expert_sizes({500, 200, 400});
  CHECK(m.shape.layers()[0].expert_bytes == 500);
  CHECK(m.shape.layers()[1].expert_bytes == 300);
  // A node that reports no sizes holds the file's.
  m.admit_expert_sizes({});
  for (const auto& layer : m.shape.layers()) CHECK(layer.expert_bytes == 1000);
}

}  // namespace
}  // namespace dancemoe::scheduler
