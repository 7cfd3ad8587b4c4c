// ZAP authentication for CURVE server sockets (docs/security.md).
//
// libzmq asks the ZAP handler of a socket's context (RFC 27, on
// inproc://zeromq.zap.01) whether a client that completed the CURVE
// handshake may connect. ZapHandler answers from a KeyAllowlist: a key in
// the list is admitted and its Z85 text becomes the connection's ZAP
// User-Id, which every message from it carries (ReceivedMessage::sender_key
// in zmq_transport.h); any other key, and any other mechanism, is denied --
// the client gets no connection and so no answer.
//
// ZAP runs once per connection. A key removed from the list later is not
// disconnected by libzmq, so receivers check sender_key against the list
// again for every message (KeyAllowlist::contains), which is what makes a
// revocation take effect at once on live connections too.
//
// One ZapHandler per zmq::context_t, started before any CURVE server socket
// of that context binds; it owns one REP socket and one thread, and stops
// (joins) in its destructor, which must run before the context is closed.
// KeyAllowlist is thread-safe (replaced by one thread, read by the handler
// and by the receivers).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <zmq.hpp>

#include "common/base/status.h"

namespace dancemoe::net {

class KeyAllowlist {
 public:
  void replace(std::set<std::string, std::less<>> keys);
  bool contains(std::string_view key) const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::set<std::string, std::less<>> keys_;
};

class ZapHandler {
 public:
  // Binds the ZAP endpoint of `context` and starts answering. `allowed` is
  // shared with the owner, who may replace its keys at any time.
  static Result<std::unique_ptr<ZapHandler>> start(zmq::context_t& context,
                                                   std::shared_ptr<const KeyAllowlist> allowed);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  uint64_t admitted() const { return admitted_.load(); }
  uint64_t denied() const { return denied_.load(); }

 private:
  ZapHandler(std::shared_ptr<const KeyAllowlist> allowed) : allowed_(std::move(allowed)) {}
  void run(zmq::socket_t socket);

  std::shared_ptr<const KeyAllowlist> allowed_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> admitted_{0};
  std::atomic<uint64_t> denied_{0};
  std::thread thread_;
};

}  // namespace dancemoe::net
