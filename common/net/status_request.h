// One StatusRequest to a scheduler and its answer (DESIGN.md §7): what the
// `dancemoe` cluster commands ask, and what a node's `--doctor` asks to
// see that the scheduler is there, runs the same model and keeps the same
// time. A DEALER socket of its own, one request, one reply (StatusReply
// JSON or Error), bounded by a timeout.
//
// Errors: no answer within the timeout is `unavailable` with
// `unreachable_message` (the caller says where and why that may be); an
// unreadable answer is `unavailable` too; an Error reply keeps its code and
// message. Thread-safe (each call has its own context and socket).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/base/status.h"
#include "common/net/zmq_transport.h"

namespace dancemoe::net {

struct StatusRequestOptions {
  std::string endpoint;               // tcp://HOST:PORT, already checked
  std::optional<CurveOptions> curve;  // nullopt: plain (--insecure)
  std::string cluster_id;             // empty: accepted by any scheduler
  std::string sender = "dancemoe-cli";
  std::chrono::milliseconds timeout{5000};
  std::string unreachable_message;
};

Result<nlohmann::json> request_status(const StatusRequestOptions& options, const std::string& what,
                                      const nlohmann::json& arguments = nlohmann::json::object());

}  // namespace dancemoe::net
