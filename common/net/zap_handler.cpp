#include "common/net/zap_handler.h"

#include <spdlog/spdlog.h>
#include <zmq.h>

#include <array>
#include <vector>
#include <zmq_addon.hpp>

namespace dancemoe::net {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr std::chrono::milliseconds kPoll{100};  // how often the destructor is noticed

// Request frames of RFC 27: version, request id, domain, address, identity,
// mechanism, then the mechanism's credentials (CURVE: the client's 32-byte key).
constexpr size_t kRequestFrames = 7;

std::string text_of(const zmq::message_t& m) { return m.to_string(); }

}  // namespace

void KeyAllowlist::replace(std::set<std::string, std::less<>> keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  keys_ = std::move(keys);
}

bool KeyAllowlist::contains(std::string_view key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return keys_.find(key) != keys_.end();
}

size_t KeyAllowlist::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return keys_.size();
}

Result<std::unique_ptr<ZapHandler>> ZapHandler::start(zmq::context_t& context,
                                                      std::shared_ptr<const KeyAllowlist> allowed) {
  std::unique_ptr<ZapHandler> handler(new ZapHandler(std::move(allowed)));
  try {
    zmq::socket_t socket(context, zmq::socket_type::rep);
    socket.set(zmq::sockopt::linger, 0);
    socket.bind(kZapEndpoint);
    handler->thread_ = std::thread(
        [raw = handler.get(), s = std::move(socket)]() mutable { raw->run(std::move(s)); });
  } catch (const zmq::error_t& e) {
    return unavailable(std::string("cannot start the ZAP handler on ") + kZapEndpoint + ": " +
                       e.what());
  }
  return handler;
}

ZapHandler::~ZapHandler() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
}

void ZapHandler::run(zmq::socket_t socket) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  while (!stopping_.load()) {
    std::vector<zmq::message_t> request;
    try {
      if (zmq::poll(&item, 1, kPoll) == 0) continue;
      if (!zmq::recv_multipart(socket, std::back_inserter(request))) continue;
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      spdlog::error("ZAP handler stopped: {}", e.what());
      return;
    }
    // A REP socket must answer every request it received, even a malformed one.
    const std::string request_id = request.size() > 1 ? text_of(request[1]) : std::string();
    std::string status = "400";
    std::string status_text = "unknown key";
    std::string user_id;
    if (request.size() < kRequestFrames || text_of(request[0]) != "1.0") {
      status = "500";
      status_text = "malformed ZAP request";
    } else if (text_of(request[5]) != "CURVE" || request[6].size() != 32) {
      status_text = "only CURVE clients are admitted";
    } else {
      std::array<char, 41> z85{};
      zmq_z85_encode(z85.data(), static_cast<const uint8_t*>(request[6].data()), 32);
      if (allowed_->contains(z85.data())) {
        status = "200";
        status_text = "OK";
        user_id = z85.data();
      }
    }
    (status == "200" ? admitted_ : denied_).fetch_add(1);
    if (status != "200") {
      spdlog::debug("ZAP: denied a connection from {} ({})",
                    request.size() > 3 ? text_of(request[3]) : std::string("?"), status_text);
    }
    try {
      std::array<zmq::const_buffer, 6> reply = {zmq::str_buffer("1.0"), zmq::buffer(request_id),
                                                zmq::buffer(status),    zmq::buffer(status_text),
                                                zmq::buffer(user_id),   zmq::const_buffer()};
      zmq::send_multipart(socket, reply);
    } catch (const zmq::error_t& e) {
      spdlog::error("ZAP handler: cannot answer: {}", e.what());
    }
  }
}

}  // namespace dancemoe::net
