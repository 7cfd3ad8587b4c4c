// MemberKeys: this node's CURVE key pair and the cluster's current members
// (docs/security.md) -- the public keys the node trusts.
//
// Attached, the scheduler sends the members (proto::Members: every admitted
// node key with the node id it registered) after registration, with every
// placement version and whenever they change; standalone, they come from
// --peer-keys DIR (NODE_ID.pub each). They serve two purposes:
//   - the expert service admits exactly these keys (the allowlist its ZAP
//     handler reads, checked again for every message), so a stranger or a
//     revoked node gets no expert calls and no weights;
//   - links to a peer's expert service (PeerPool, ExpertFetcher) pin the
//     peer's key by node id, so a stranger cannot pose as a holder.
//
// Without a key pair (--insecure) nothing is checked: client_options()
// answers nullopt (plain sockets). Thread-safe: replaced by the scheduler
// link's thread, read by the executor, the loader and the ZAP handler.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/net/zap_handler.h"
#include "common/net/zmq_transport.h"
#include "common/proto/messages.h"

namespace dancemoe::node {

class MemberKeys {
 public:
  // nullopt: insecure.
  explicit MemberKeys(std::optional<net::CurveKeyPair> own) : own_(std::move(own)) {}

  bool secure() const { return own_.has_value(); }
  const std::optional<net::CurveKeyPair>& own() const { return own_; }

  // Replaces the members (the scheduler's message, or a --peer-keys directory).
  void replace(const proto::Members& members);
  uint64_t version() const;
  size_t size() const;

  // The options of a socket that connects to node `node_id`'s expert
  // service: CURVE pinning its member key; nullopt when insecure;
  // unavailable when `node_id` is not a current member with a key.
  Result<std::optional<net::CurveOptions>> client_options(const std::string& node_id) const;
  // The options of this node's expert service socket (nullopt when insecure).
  std::optional<net::CurveOptions> server_options() const;

  // What the expert service admits (every member key).
  std::shared_ptr<const net::KeyAllowlist> allowlist() const { return allowlist_; }

 private:
  std::optional<net::CurveKeyPair> own_;
  std::shared_ptr<net::KeyAllowlist> allowlist_ = std::make_shared<net::KeyAllowlist>();
  mutable std::mutex mutex_;
  uint64_t version_ = 0;
  std::map<std::string, std::string> key_of_node_;  // node id -> Z85
};

// The members of a standalone cluster from a directory of NODE_ID.pub files.
Result<proto::Members> members_from_directory(const std::string& dir);

}  // namespace dancemoe::node
