#include "edge_node/remote/peer_pool.h"

namespace dancemoe::node {

Result<PeerLink*> PeerPool::link(const PeerInfo& peer) {
  std::optional<net::CurveOptions> curve;
  if (options_.members) {
    DMOE_ASSIGN_OR_RETURN(curve, options_.members->client_options(peer.node_id));
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
