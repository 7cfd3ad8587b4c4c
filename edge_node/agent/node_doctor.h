// `dancemoe-node --doctor` (and `dancemoe doctor node`): checks this machine
// for a node with the flags it would start with, without loading weights or
// holding a port: flags, model (config and every header), tokenizer,
// manifest, devices and their expert budgets, other nodes on this host,
// ports, keys (readable, mode 0600, matching), and when attached the
// scheduler (reachable with these keys, the same cluster id and model id)
// and the clock (skew against the scheduler's). Each failure says what to do.
// Blocking (up to `scheduler_timeout` for the scheduler); thread-safe.
#pragma once

#include <chrono>

#include "common/runtime/doctor_report.h"
#include "edge_node/agent/node_options.h"

namespace dancemoe::node {

DoctorReport check_node(const NodeOptions& options,
                        std::chrono::milliseconds scheduler_timeout = std::chrono::seconds(3));

}  // namespace dancemoe::node
