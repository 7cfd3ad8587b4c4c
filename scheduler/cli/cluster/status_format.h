// The text of `dancemoe status` (and of the demo's before/after views):
// model, placement version and age, nodes with their local-hit ratios (last
// window and since adoption), requests and tokens, the last decision with
// C(P), C(P'), T_mig and its outcome, a migration in progress, and the
// rejected-message counters -- from the scheduler's "status" JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace dancemoe::cli {

std::string format_status(const nlohmann::json& status);

}  // namespace dancemoe::cli
