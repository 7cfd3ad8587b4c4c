// The experts one node holds in a placement JSON (the scheduler's status
// query "placement", or any file in the one JSON form), for tests.
#pragma once

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/placement/placement_json.h"

namespace dancemoe::testing {

inline std::vector<ExpertRef> experts_of(const nlohmann::json& placement, const std::string& node) {
  static const std::string kSource = "placement";
  Result<ClusterPlacement> read = placement_from_json(placement, kSource, Endpoints::kOptional);
  REQUIRE(read.is_ok());
  const NodePlacement* n = read->find(node);
  return n == nullptr ? std::vector<ExpertRef>() : n->experts();
}

}  // namespace dancemoe::testing
