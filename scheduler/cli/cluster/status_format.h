// The text of `dancemoe status` (and of the demo's before/after views):
// model, placement version and age, nodes with their local-hit ratios (last
// window and since adoption), requests and tokens, the last decision with
// C(P), C(P'), T_mig and its outcome, a migration in progress, and the
// rejected-message counters -- from the scheduler's "status" JSON. The
// time of the scheduler and of each node's last report are shown; figures
// of a node whose last report is older than one report window are marked
// '*'. `max_width` > 0 narrows the tables to fit (a terminal's width).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace dancemoe::cli {

std::string format_status(const nlohmann::json& status, size_t max_width = 0);

}  // namespace dancemoe::cli
