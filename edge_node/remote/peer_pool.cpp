#include "edge_node/remote/peer_pool.h"

#include <spdlog/spdlog.h>

namespace dancemoe::node {

Result<PeerLink*> PeerPool::link(const PeerInfo& peer) {
  std::optional<net::CurveOptions> curve;
  if (options_.members) {
    Result<std::optional<net::CurveOptions>> options =
        options_.members->client_options(peer.node_id);
    if (!options.is_ok()) {
      if (warned_no_key_.insert(peer.node_id).second) {
        spdlog::warn(
            "peer '{}' holds experts in the placement but this node has no key for it: {}; its "
            "experts are computed here from the offload cache, if any (standalone: add {}.pub "
            "to --peer-keys)",
            peer.node_id, options.status().message(), peer.node_id);
      }
      return options.status();
    }
    curve = *options;
    warned_no_key_.erase(peer.node_id);
  }
  const std::string key = curve ? curve->server_key : std::string();
  auto it = links_.find(peer.node_id);
  if (it != links_.end() && it->second->endpoint() == peer.expert_endpoint &&
      it->second->server_key() == key) {
    return it->second.get();
  }
  if (peer.expert_endpoint.empty()) {
    return unavailable("peer '" + peer.node_id + "' has no expert endpoint in the placement");
  }
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<PeerLink> link,
                        PeerLink::connect(context_, {peer.node_id, peer.expert_endpoint, curve},
                                          options_.send_timeout, options_.max_message_bytes));
  PeerLink* raw = link.get();
  std::unique_ptr<PeerLink>& slot = links_[peer.node_id];
  if (slot) retired_.push_back(std::move(slot));
  slot = std::move(link);
  return raw;
}

PeerLink* PeerPool::find(const std::string& node_id) {
  auto it = links_.find(node_id);
  return it == links_.end() ? nullptr : it->second.get();
}

}  // namespace dancemoe::node
