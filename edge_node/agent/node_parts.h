// NodeParts: the components of one `dancemoe-node` process (DESIGN.md §2-3),
// built in dependency order by NodeAgent and destroyed in reverse:
//
//   model files -> tokenizer (when present); ModelRuntime (common/assembly:
//     Checkpoint, DenseWeights, ExpertStore over the node's devices, the
//     per-device engines, Transformer) <- MigrationExecutor (placement:
//     file or scheduler)
//   Transformer -> DistributedMoeExecutor -> local experts on their devices
//                                            | PeerPool | OffloadCache
//   PromptRunner (one generation at a time)   ExpertService (own workers)
//   HttpServer (NodeHttpBackend)              SchedulerLink (attached mode)
//
// Owned by NodeAgent; NodeHttpBackend reads it. Each component documents
// its own thread-safety; the fields themselves are set once, in init().
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "common/assembly/model_runtime.h"
#include "common/net/zap_handler.h"
#include "common/tokenizer/chat_template.h"
#include "common/tokenizer/tokenizer.h"
#include "edge_node/activation/activation_log.h"
#include "edge_node/agent/prompt_runner.h"
#include "edge_node/agent/scheduler_link.h"
#include "edge_node/expert_service/expert_service.h"
#include "edge_node/holders/holder_table.h"
#include "edge_node/http/http_server.h"
#include "edge_node/migration/migration_executor.h"
#include "edge_node/moe/distributed_executor.h"
#include "edge_node/remote/member_keys.h"
#include "edge_node/remote/offload_cache.h"
#include "edge_node/remote/peer_pool.h"
#include "edge_node/trace/trace_writer.h"

namespace dancemoe::node {

struct NodeParts {
  zmq::context_t context{1};
  // CURVE (docs/security.md): the node's key pair and the members it trusts;
  // the context's ZAP handler admits them. Declared right after the
  // context: destroyed after every socket user, before the context.
  std::shared_ptr<MemberKeys> members;
  std::unique_ptr<net::ZapHandler> zap;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;  // null without tokenizer.json
  // How chats are formatted (common/tokenizer/chat_template.h); null: no chat.
  std::shared_ptr<const tokenizer::ChatTemplate> chat_template;
  std::unique_ptr<HolderTableHandle> table;
  std::unique_ptr<ActivationLog> log;
  std::unique_ptr<PeerPool> peers;
  std::unique_ptr<OffloadCache> offload;  // null with --offload-cache 0
  // The model on this node's devices; its executor is the distributed one.
  std::unique_ptr<ModelRuntime> runtime;
  DistributedMoeExecutor* executor = nullptr;  // owned by runtime
  std::unique_ptr<TraceWriter> trace;          // null without --record-trace
  std::unique_ptr<RoutingReplay> replay;       // null without --replay-routing
  std::unique_ptr<MigrationExecutor> migration;
  std::unique_ptr<PromptRunner> runner;
  std::unique_ptr<ExpertService> service;
  std::unique_ptr<HttpServer> http;
  std::unique_ptr<SchedulerLink> link;  // null in standalone mode

  std::string advertise;       // the expert endpoint peers are told
  std::string scheduler_key;   // Z85, pinned (attached mode with keys)
  uint64_t expert_budget = 0;  // over every device
  uint64_t migration_headroom = 0;
  double load_bytes_per_s = 0;  // disk to host, measured at start

  const Checkpoint& checkpoint() const { return runtime->checkpoint(); }
  ExpertStore& store() const { return runtime->experts(); }

  std::mutex reload_mutex;
  std::optional<uint64_t> reload_ready;  // standalone reload loaded, to commit
};

}  // namespace dancemoe::node
