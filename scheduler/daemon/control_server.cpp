#include "scheduler/daemon/control_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/net/poller.h"

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

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void ControlServer::handle(const net::ReceivedMessage& message) {
  const auto start = std::chrono::steady_clock::now();
  service_->handle(message);
  flush();
  if (metrics_) {
    metrics_->observe(
        message.envelope.is_ok() ? proto::body_name(message.envelope->body) : "undecodable",
        seconds_since(start));
  }
}

void ControlServer::tick() {
  const auto start = std::chrono::steady_clock::now();
  service_->tick();
  flush();
  if (metrics_) metrics_->observe("tick", seconds_since(start));
}

Status ControlServer::run(const std::atomic<bool>& stop) {
  SystemClock clock;
  net::Poller poller;
  const size_t socket_idx = poller.add(socket_);
  const size_t inbox_idx = inbox_ ? poller.add_fd(inbox_->wake_fd()) : SIZE_MAX;
  Status status;
  while (!stop.load()) {
    const int64_t wait_ms =
        std::clamp<int64_t>(service_->next_wakeup_ms() - clock.steady_ms(), 0, 100);
    Result<bool> ready = poller.wait(std::chrono::milliseconds(wait_ms));
    if (!ready.is_ok()) {
      status = ready.status();
      break;
    }
    if (*ready && inbox_ && poller.readable(inbox_idx)) inbox_->run_waiting(*service_);
    if (*ready && poller.readable(socket_idx)) {
      // Drain what is already queued before ticking, without waiting.
      for (int i = 0; i < 256 && !stop.load(); ++i) {
        std::optional<net::ReceivedMessage> message =
            net::receive_message(socket_, std::chrono::milliseconds(0), /*router=*/true, limits_);
        if (!message) break;
        handle(*message);
      }
    }
    tick();
  }
  if (inbox_) inbox_->close();
  return status;
}

Status write_ready_file(const std::string& path, const std::string& endpoint,
                        const std::string& http) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    if (!out) return unavailable(path + ": cannot write the ready file");
    nlohmann::json ready = {{"control", endpoint}};
    if (!http.empty()) ready["http"] = http;
    out << ready.dump() << "\n";
    if (!out) return unavailable(path + ": cannot write the ready file");
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) return unavailable(path + ": cannot write the ready file: " + ec.message());
  return Status::ok();
}

}  // namespace dancemoe::scheduler
