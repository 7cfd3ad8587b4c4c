#include "edge_node/remote/member_keys.h"

#include <set>

#include "common/net/curve_keys.h"

namespace dancemoe::node {

void MemberKeys::replace(const proto::Members& members) {
  std::set<std::string, std::less<>> keys;
  std::map<std::string, std::string> key_of_node;
  for (const proto::MemberKey& m : members.members) {
    keys.insert(m.public_key);
    if (!m.node_id.empty()) key_of_node[m.node_id] = m.public_key;
  }
  allowlist_->replace(std::move(keys));
  std::lock_guard<std::mutex> lock(mutex_);
  key_of_node_ = std::move(key_of_node);
  version_ = members.version;
}

uint64_t MemberKeys::version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return version_;
}

size_t MemberKeys::size() const { return allowlist_->size(); }

Result<std::optional<net::CurveOptions>> MemberKeys::client_options(
    const std::string& node_id) const {
  if (!own_) return std::optional<net::CurveOptions>();
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = key_of_node_.find(node_id);
  if (it == key_of_node_.end()) {
    return unavailable("node '" + node_id +
                       "' is not a current member with a known key (not admitted, revoked, or "
                       "not registered yet); not calling it");
  }
  return std::optional<net::CurveOptions>(net::CurveOptions{*own_, it->second});
}

std::optional<net::CurveOptions> MemberKeys::server_options() const {
  if (!own_) return std::nullopt;
  return net::CurveOptions{*own_, {}};
}

Result<proto::Members> members_from_directory(const std::string& dir) {
  DMOE_ASSIGN_OR_RETURN(const auto keys, net::read_public_key_dir(dir).with_context("--peer-keys"));
  proto::Members members;
  members.version = 1;
  for (const auto& [name, key] : keys) members.members.push_back({name, name, key});
  return members;
}

}  // namespace dancemoe::node
