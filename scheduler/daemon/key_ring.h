// KeyRing: who may talk to the scheduler (docs/security.md).
//
// Two directories of public keys (NAME.pub): the admitted node keys
// (--nodes-keys) and the operator keys (--operator-keys). Every key of both
// is in the allowlist the control socket's ZAP handler admits; a message's
// sender key (ReceivedMessage::sender_key) is then classified here:
//
//   node       may register one node id (bound to the key, store.h) and send
//              the node protocol; may read status
//   operator   may read status and change the cluster (placement round and
//              apply, nodes admit/revoke/forget)
//   unknown    nothing: the scheduler does not answer (a key revoked while
//              its connection was open gets here)
//
// admit() and revoke() change the node keys live and persist the change as
// the key file itself (written to or removed from the directory), so a
// restarted scheduler admits the same keys. Operator keys change only with
// the directory and a restart.
//
// An insecure ring (--insecure) has no keys: every sender may do everything,
// as before CURVE. Not thread-safe: the service loop owns it; the allowlist
// it feeds is thread-safe (read by the ZAP handler's thread).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/status.h"
#include "common/net/zap_handler.h"

namespace dancemoe::scheduler {

struct Principal {
  bool node = false;
  bool operator_key = false;
  std::string name;  // the key's name (file stem); empty when insecure or unknown
  bool known() const { return node || operator_key; }
};

class KeyRing {
 public:
  static KeyRing insecure();
  static Result<KeyRing> load(const std::filesystem::path& nodes_dir,
                              const std::filesystem::path& operators_dir);

  bool secure() const { return secure_; }
  Principal who(std::string_view sender_key) const;

  // Writes NAME.pub into the nodes directory and admits it. Refuses a name
  // or key already admitted, and an operator's key.
  Status admit(const std::string& name, const std::string& public_key);
  // Removes NAME.pub; returns the key it held.
  Result<std::string> revoke(const std::string& name);

  // name -> key of the admitted node keys.
  const std::map<std::string, std::string>& node_keys() const { return node_keys_; }
  std::optional<std::string> node_key_name(std::string_view key) const;
  size_t n_operator_keys() const { return operator_keys_.size(); }
  // name -> key of the operator keys (fixed for the ring's life).
  const std::map<std::string, std::string>& operator_keys() const { return operator_keys_; }
  std::shared_ptr<const net::KeyAllowlist> allowlist() const { return allowlist_; }

 private:
  void publish();

  bool secure_ = false;
  std::filesystem::path nodes_dir_;
  std::map<std::string, std::string> node_keys_;      // name -> key
  std::map<std::string, std::string> operator_keys_;  // name -> key
  std::shared_ptr<net::KeyAllowlist> allowlist_ = std::make_shared<net::KeyAllowlist>();
};

}  // namespace dancemoe::scheduler
