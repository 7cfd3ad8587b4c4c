#include "scheduler/daemon/control_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace dancemoe::scheduler {

Result<std::unique_ptr<ControlServer>> ControlServer::bind(const ControlServerOptions& options,
                                                           SchedulerService* service) {
  std::unique_ptr<ControlServer> server(new ControlServer());
  server->service_ = service;
  server->limits_.max_envelope_bytes = static_cast<size_t>(options.max_message_bytes);
  net::SocketOptions socket_options;
  // ZeroMQ drops the connection of a peer whose message exceeds this, with
  // no reply possible; messages between the decode limit and this bound
  // are received and answered with an Error naming the limit.
  socket_options.max_message_bytes = options.max_message_bytes * 4;
  // Never block the loop on a slow or vanished peer: a reply that cannot be
  // queued at once is dropped (and counted); the peer resends.
  socket_options.send_timeout = std::chrono::milliseconds(0);
  socket_options.send_high_water_mark = 10000;
  socket_options.receive_high_water_mark = 10000;
  if (options.curve) {
    // The ZAP handler must answer before the first client connects.
    DMOE_ASSIGN_OR_RETURN(server->zap_,
                          net::ZapHandler::start(server->context_, service->keys().allowlist()));
    socket_options.curve = net::CurveOptions{*options.curve, {}};
  }
  DMOE_ASSIGN_OR_RETURN(
      server->socket_,
      net::make_socket(server->context_, zmq::socket_type::router, socket_options));
  DMOE_RETURN_IF_ERROR(net::bind(server->socket_, options.endpoint));
  std::string endpoint = net::last_endpoint(server->socket_);
  for (const char* wildcard : {"tcp://0.0.0.0:", "tcp://[::]:"}) {
    if (endpoint.rfind(wildcard, 0) == 0) {
      endpoint = "tcp://127.0.0.1:" + endpoint.substr(std::string(wildcard).size());
    }
  }
  server->endpoint_ = endpoint;
  return server;
}

void ControlServer::flush() {
  for (Outgoing& out : service_->take_outbox()) {
    const Status sent = net::send_message(socket_, out.envelope, {}, out.routing_id);
    if (!sent.is_ok()) {
      // The peer is gone or not reading; it re-registers or resends.
      spdlog::debug("could not send {} to a peer: {}", proto::body_name(out.envelope.body),
                    sent.to_string());
    }
  }
}

Status ControlServer::run(const std::atomic<bool>& stop) {
  SystemClock clock;
  while (!stop.load()) {
    const int64_t wait_ms =
        std::clamp<int64_t>(service_->next_wakeup_ms() - clock.steady_ms(), 0, 100);
    std::optional<net::ReceivedMessage> message =
        net::receive_message(socket_, std::chrono::milliseconds(wait_ms), /*router=*/true, limits_);
    if (message) {
      service_->handle(*message);
      flush();
      // Drain what is already queued before ticking, without waiting.
      for (int i = 0; i < 256 && !stop.load(); ++i) {
        message = net::receive_message(socket_, std::chrono::milliseconds(0), true, limits_);
        if (!message) break;
        service_->handle(*message);
        flush();
      }
    }
    service_->tick();
    flush();
  }
  return Status::ok();
}

Status write_ready_file(const std::string& path, const std::string& endpoint) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    if (!out) return unavailable(path + ": cannot write the ready file");
    out << nlohmann::json{{"control", endpoint}}.dump() << "\n";
    if (!out) return unavailable(path + ": cannot write the ready file");
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) return unavailable(path + ": cannot write the ready file: " + ec.message());
  return Status::ok();
}

}  // namespace dancemoe::scheduler
