// Fuzz target: the expert service's handling of one inbound message
// (ExpertRequestHandler: decode, validate, compute or refuse) -- what a peer
// controls completely. Input layout: a 4-byte little-endian envelope
// length, the envelope bytes, then the raw payload frame. Whatever the
// bytes, the reply must be an ExpertResult whose frame matches its shape, an
// ExpertWeightsChunk, or an Error -- never a crash or an unbounded allocation.
//
// The handler serves a tiny synthetic model (written once to a temporary
// directory) holding half its experts, so "not held here" is reachable.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>

#include "common/backend/cpu/cpu_expert_engine.h"
#include "common/model/checkpoint.h"
#include "common/model/synthetic/synthetic_model.h"
#include "common/proto/codec.h"
#include "common/runtime/thread_pool.h"
#include "edge_node/expert_service/request_handler.h"

namespace {

using namespace dancemoe;

struct Service {
  Service() {
    // Under the build tree: tests write nothing outside the repository.
    dir = std::filesystem::path(DMOE_BUILD_DIR) / "test-scratch" /
          ("expert_call_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir.parent_path());
    SyntheticModelSpec spec;
    if (!write_synthetic_model(spec, dir).is_ok()) std::abort();
    auto opened = Checkpoint::open(dir);
    if (!opened.is_ok()) std::abort();
    checkpoint = std::move(opened).value();
    store = std::make_unique<ExpertStore>(*checkpoint);
    const ModelConfig& c = checkpoint->config();
    for (int32_t l = 0; l < c.n_layers; ++l) {
      if (!c.layer_is_moe[static_cast<size_t>(l)]) continue;
      for (int32_t e = 0; e < c.n_experts; e += 2) (void)store->load({l, e});
    }
    blobs = std::make_unique<node::ExpertBlobCache>(*store);
    pool = std::make_unique<ThreadPool>(1);
    computer = std::make_unique<ExpertComputer>(
        std::make_unique<backend::CpuExpertEngine>(*pool, ComputePrecision::kBF16));
    node::ServiceLimits limits;
    limits.max_call_tokens = 64;
    limits.max_chunk_bytes = 4096;
    handler = std::make_unique<node::ExpertRequestHandler>(
        c, *store, *blobs, *computer, node::ServiceIdentity{"fuzz", ""}, limits, counters);
  }
  ~Service() {
    // How deep the inputs got: set DMOE_FUZZ_STATS to see it.
    if (std::getenv("DMOE_FUZZ_STATS") != nullptr) {
      std::fprintf(stderr, "expert_call_fuzz: %llu calls computed, %llu chunks, %llu errors\n",
                   static_cast<unsigned long long>(counters.calls.load()),
                   static_cast<unsigned long long>(counters.chunks.load()),
                   static_cast<unsigned long long>(counters.errors.load()));
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  std::filesystem::path dir;
  std::unique_ptr<Checkpoint> checkpoint;
  std::unique_ptr<ExpertStore> store;
  std::unique_ptr<node::ExpertBlobCache> blobs;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<ExpertComputer> computer;
  node::ServiceCounters counters;
  std::unique_ptr<node::ExpertRequestHandler> handler;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Service service;
  if (size < 4) return 0;
  const uint32_t n = static_cast<uint32_t>(data[0]) | static_cast<uint32_t>(data[1]) << 8 |
                     static_cast<uint32_t>(data[2]) << 16 | static_cast<uint32_t>(data[3]) << 24;
  const size_t envelope_bytes = std::min<size_t>(n, size - 4);
  const std::span<const uint8_t> envelope(data + 4, envelope_bytes);
  const std::span<const uint8_t> payload(data + 4 + envelope_bytes, size - 4 - envelope_bytes);
  const node::Reply reply = service.handler->handle(proto::decode(envelope), payload);
  if (const auto* r = std::get_if<proto::ExpertResult>(&reply.envelope.body)) {
    if (proto::check_tensor_payload(r->dtype, r->n_tokens, r->hidden, reply.payload.size(), "r")
            .is_ok() == false) {
      __builtin_trap();
    }
  } else if (const auto* c = std::get_if<proto::ExpertWeightsChunk>(&reply.envelope.body)) {
    if (c->length != reply.payload.size() || c->length > 4096) __builtin_trap();
  } else if (!std::holds_alternative<proto::Error>(reply.envelope.body)) {
    __builtin_trap();
  }
  // The reply itself must encode and decode (it goes back on the wire).
  if (!proto::decode(proto::encode(reply.envelope)).is_ok()) __builtin_trap();
  return 0;
}
