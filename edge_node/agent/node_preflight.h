// What a node checks before it loads anything slow (its weights), so that a
// misstep costs a second, not minutes: the ports it will bind, another node
// on the same host, and the devices with their expert budgets as the node
// would plan them. NodeAgent::init runs the first two and ModelRuntime::open
// the third; `dancemoe-node --doctor` (node_doctor.h) reports all three.
// Pure functions of the options and this host; thread-safe.
#pragma once

#include "common/assembly/runtime_devices.h"
#include "common/base/status.h"
#include "edge_node/agent/node_options.h"

namespace dancemoe::node {

// --http and --experts can be bound now; unavailable naming the flag,
// the address and why not (in use, not an address of this host).
Status check_node_ports(const NodeOptions& options);

// With another dancemoe-node on this host, both would take all of its free
// memory for experts: a budget must be given (--expert-memory, or
// --device-memory for every device). failed_precondition naming the other
// process and the flags.
Status check_shared_host(const NodeOptions& options);

// The device request the node opens its runtime with (--devices,
// --device-memory, --expert-memory, the offload cache and the context).
DeviceRequest node_device_request(const NodeOptions& options);

}  // namespace dancemoe::node
