#include "edge_node/agent/node_preflight.h"

#include "common/net/endpoint.h"
#include "common/net/port_probe.h"
#include "common/runtime/host_processes.h"

namespace dancemoe::node {

Status check_node_ports(const NodeOptions& options) {
  if (options.role == NodeRole::kFull) {  // an experts-only node serves no HTTP
    DMOE_ASSIGN_OR_RETURN(net::HostPort http,
                          net::parse_http_address("--http", options.http, true));
    DMOE_RETURN_IF_ERROR(net::check_tcp_port_free("--http", http.host, http.port));
  }
  DMOE_ASSIGN_OR_RETURN(net::HostPort experts,
                        net::parse_tcp_endpoint("--experts", options.experts_bind, true));
  return net::check_tcp_port_free("--experts", experts.host, experts.port);
}

Status check_shared_host(const NodeOptions& options) {
  const bool every_device_sized =
      options.devices.expert_memory.size() == options.devices.devices.size();
  if (options.expert_memory_bytes > 0 || every_device_sized) return Status::ok();
  const std::vector<int> others = processes_named("dancemoe-node");
  if (others.empty()) return Status::ok();
  return failed_precondition(
      "another dancemoe-node (pid " + std::to_string(others.front()) +
      ") runs on this host, and both would take all of its free memory for experts: give each "
      "node its share with --expert-memory BYTES (or --device-memory DEV=BYTES for every device)");
}

DeviceRequest node_device_request(const NodeOptions& options) {
  DeviceRequest request;
  request.devices = options.devices;
  request.precision = options.precision;
  if (options.expert_memory_bytes > 0) request.expert_memory_bytes = options.expert_memory_bytes;
  request.host_reserved_bytes = options.offload_cache_bytes;
  request.kv_cache_tokens = options.context_tokens;
  request.kv_element = options.kv_element;
  return request;
}

}  // namespace dancemoe::node
