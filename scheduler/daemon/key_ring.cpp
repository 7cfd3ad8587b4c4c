#include "scheduler/daemon/key_ring.h"

#include <system_error>

#include "common/net/curve_keys.h"

namespace dancemoe::scheduler {

KeyRing KeyRing::insecure() { return KeyRing(); }

Result<KeyRing> KeyRing::load(const std::filesystem::path& nodes_dir,
                              const std::filesystem::path& operators_dir) {
  KeyRing ring;
  ring.secure_ = true;
  ring.nodes_dir_ = nodes_dir;
  DMOE_ASSIGN_OR_RETURN(ring.node_keys_,
                        net::read_public_key_dir(nodes_dir).with_context("--nodes-keys"));
  DMOE_ASSIGN_OR_RETURN(ring.operator_keys_,
                        net::read_public_key_dir(operators_dir).with_context("--operator-keys"));
  if (ring.operator_keys_.empty()) {
    return invalid_argument("--operator-keys " + operators_dir.string() +
                            ": no NAME.pub in it; without an operator key nobody could change "
                            "the cluster (dancemoe keys generate --out DIR --name NAME)");
  }
  for (const auto& [name, key] : ring.node_keys_) {
    for (const auto& [op_name, op_key] : ring.operator_keys_) {
      if (key == op_key) {
        return invalid_argument("key '" + name + "' of --nodes-keys is also operator key '" +
                                op_name + "'; give nodes and operators separate keys");
      }
    }
  }
  ring.publish();
  return ring;
}

Principal KeyRing::who(std::string_view sender_key) const {
  Principal p;
  if (!secure_) {
    p.node = true;
    p.operator_key = true;
    return p;
  }
  if (sender_key.empty()) return p;
  for (const auto& [name, key] : node_keys_) {
    if (key == sender_key) {
      p.node = true;
      p.name = name;
      return p;
    }
  }
  for (const auto& [name, key] : operator_keys_) {
    if (key == sender_key) {
      p.operator_key = true;
      p.name = name;
      return p;
    }
  }
  return p;
}

Status KeyRing::admit(const std::string& name, const std::string& public_key) {
  if (!secure_) {
    return failed_precondition("the scheduler runs with --insecure: there are no keys to admit");
  }
  DMOE_RETURN_IF_ERROR(net::check_key_name(name));
  if (!net::is_z85_key(public_key)) {
    return invalid_argument("public key of '" + name + "': expected 40 Z85 characters");
  }
  if (node_keys_.count(name) != 0) {
    return failed_precondition("a node key named '" + name +
                               "' is already admitted; revoke it first or choose another name");
  }
  if (std::optional<std::string> other = node_key_name(public_key)) {
    return failed_precondition("this key is already admitted as '" + *other + "'");
  }
  for (const auto& [op_name, op_key] : operator_keys_) {
    if (op_key == public_key) {
      return failed_precondition("this key is operator key '" + op_name +
                                 "'; give nodes their own keys");
    }
  }
  DMOE_RETURN_IF_ERROR(net::write_public_key_file(nodes_dir_, name, public_key));
  node_keys_[name] = public_key;
  publish();
  return Status::ok();
}

Result<std::string> KeyRing::revoke(const std::string& name) {
  if (!secure_) {
    return failed_precondition("the scheduler runs with --insecure: there are no keys to revoke");
  }
  const auto it = node_keys_.find(name);
  if (it == node_keys_.end()) {
    std::string known;
    for (const auto& [n, key] : node_keys_) known += (known.empty() ? "" : ", ") + n;
    return not_found("no admitted node key named '" + name +
                     "' (admitted: " + (known.empty() ? std::string("none") : known) + ")");
  }
  const std::filesystem::path file = nodes_dir_ / (name + ".pub");
  std::error_code ec;
  std::filesystem::remove(file, ec);
  if (ec) return unavailable(file.string() + ": cannot remove (" + ec.message() + ")");
  std::string key = it->second;
  node_keys_.erase(it);
  publish();
  return key;
}

std::optional<std::string> KeyRing::node_key_name(std::string_view key) const {
  for (const auto& [name, k] : node_keys_) {
    if (k == key) return name;
  }
  return std::nullopt;
}

void KeyRing::publish() {
  std::set<std::string, std::less<>> keys;
  for (const auto& [name, key] : node_keys_) keys.insert(key);
  for (const auto& [name, key] : operator_keys_) keys.insert(key);
  allowlist_->replace(std::move(keys));
}

}  // namespace dancemoe::scheduler
