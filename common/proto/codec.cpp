#include "common/proto/codec.h"

#include <algorithm>
#include <cmath>

#include "common/base/check.h"
#include "schemas/dancemoe_generated.h"

namespace dancemoe::proto {
namespace {

namespace fb = flatbuffers;
namespace w = dancemoe::wire;

// ---------------------------------------------------------------- encoding

w::DType to_wire(DType d) {
  switch (d) {
    case DType::kF32:
      return w::DType::F32;
    case DType::kF16:
      return w::DType::F16;
    case DType::kBF16:
      return w::DType::BF16;
    case DType::kU8:  // never a hidden-state type (dtype.h); the options only give float types
      break;
  }
  return w::DType::F32;
}

template <typename T>
fb::Offset<fb::Vector<const T*>> structs(fb::FlatBufferBuilder& b, const std::vector<T>& v) {
  return b.CreateVectorOfStructs(v.data(), v.size());
}

// Model configs are refused beyond 16-bit layers and experts (the wire's
// width), so an expert that does not fit is a caller's bug, not outside input.
void check_wire_expert(int32_t layer, int32_t expert) {
  DMOE_CHECK(layer >= 0 && layer <= 65535 && expert >= 0 && expert <= 65535);
}

// Strings go through CreateString(std::string) (never the *Direct helpers,
// which take a C string and would cut a string at an embedded NUL).
struct Encoder {
  fb::FlatBufferBuilder& b;

  fb::Offset<fb::String> str(const std::string& s) { return b.CreateString(s); }

  fb::Offset<fb::Vector<const w::ExpertRef*>> refs(const std::vector<ExpertRef>& v) {
    std::vector<w::ExpertRef> out;
    for (const ExpertRef& r : v) {
      check_wire_expert(r.layer, r.expert);
      out.emplace_back(static_cast<uint16_t>(r.layer), static_cast<uint16_t>(r.expert));
    }
    return b.CreateVectorOfStructs(out);
  }

  std::pair<w::Body, fb::Offset<void>> operator()(const Register& m) {
    std::vector<fb::Offset<w::DeviceInfo>> devices;
    for (const DeviceInfo& d : m.devices) {
      devices.push_back(w::CreateDeviceInfo(b, str(d.name), d.expert_budget_bytes,
                                            d.load_bytes_per_s, str(d.kind)));
    }
    auto node_id = b.CreateString(m.node_id);
    auto model_id = b.CreateString(m.model_id);
    auto devs = b.CreateVector(devices);
    auto expert_endpoint = b.CreateString(m.expert_endpoint);
    auto http_endpoint = b.CreateString(m.http_endpoint);
    auto resident = refs(m.resident);
    auto resident_devices = b.CreateVector(m.resident_devices);
    auto expert_type = b.CreateString(m.expert_type);
    auto expert_layer_bytes = b.CreateVector(m.expert_layer_bytes);
    auto expert_files = refs(m.expert_files);
    auto role = b.CreateString(m.role);
    w::RegisterBuilder rb(b);
    rb.add_node_id(node_id);
    rb.add_model_id(model_id);
    rb.add_devices(devs);
    rb.add_host_memory_bytes(m.host_memory_bytes);
    rb.add_expert_endpoint(expert_endpoint);
    rb.add_http_endpoint(http_endpoint);
    rb.add_resident(resident);
    rb.add_placement_version(m.placement_version);
    rb.add_resident_devices(resident_devices);
    rb.add_migration_headroom_bytes(m.migration_headroom_bytes);
    rb.add_expert_type(expert_type);
    rb.add_expert_layer_bytes(expert_layer_bytes);
    rb.add_expert_files_partial(m.expert_files_partial);
    rb.add_expert_files(expert_files);
    rb.add_role(role);
    return {w::Body::Register, rb.Finish().Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const RegisterReply& m) {
    return {w::Body::RegisterReply,
            w::CreateRegisterReply(b, m.accepted, str(m.reason), m.heartbeat_interval_ms,
                                   m.report_interval_ms, m.placement_version)
                .Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const Heartbeat& m) {
    return {w::Body::Heartbeat,
            w::CreateHeartbeat(b, m.placement_version, m.requests_in_flight, m.members_version)
                .Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const ActivationReport& m) {
    std::vector<w::ExpertCount> counts;
    for (const ExpertCount& c : m.counts) {
      check_wire_expert(c.layer, c.expert);
      counts.emplace_back(static_cast<uint16_t>(c.layer), static_cast<uint16_t>(c.expert), c.count);
    }
    std::vector<fb::Offset<w::PeerCallStats>> remote;
    for (const PeerCallStats& p : m.remote) {
      remote.push_back(w::CreatePeerCallStats(b, str(p.peer), p.calls, p.mean_latency_us,
                                              p.p99_latency_us, p.bytes, p.failures));
    }
    std::vector<fb::Offset<w::DeviceCompute>> devices;
    for (const DeviceCompute& d : m.devices) {
      devices.push_back(w::CreateDeviceCompute(b, str(d.device), d.pairs, d.busy_us));
    }
    std::vector<w::ExpertPair> pairs;
    for (const ExpertPair& p : m.pairs) {
      check_wire_expert(p.layer, p.a);
      check_wire_expert(p.layer, p.b);
      pairs.emplace_back(static_cast<uint16_t>(p.layer), static_cast<uint16_t>(p.a),
                         static_cast<uint16_t>(p.b), p.count);
    }
    return {w::Body::ActivationReport,
            w::CreateActivationReportDirect(
                b, m.window_start_ms, m.window_end_ms, m.tokens, m.requests, &counts, m.local_calls,
                m.local_mean_latency_us, m.local_p99_latency_us, &remote, m.placement_version,
                m.local_hits, &devices, m.pairs.empty() ? nullptr : &pairs)
                .Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const Ack& m) {
    return {w::Body::Ack, w::CreateAck(b, m.sequence).Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const PlacementPrepare& m) {
    std::vector<fb::Offset<w::NodePlacement>> nodes;
    for (const NodePlacement& n : m.nodes) {
      std::vector<fb::Offset<w::DevicePlacement>> devices;
      for (const DevicePlacement& d : n.devices) {
        auto experts = refs(d.experts);
        auto name = b.CreateString(d.device);
        devices.push_back(w::CreateDevicePlacement(b, name, experts));
      }
      nodes.push_back(w::CreateNodePlacement(b, str(n.node_id), str(n.expert_endpoint),
                                             b.CreateVector(devices)));
    }
    return {w::Body::PlacementPrepare,
            w::CreatePlacementPrepareDirect(b, m.version, &nodes).Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const Ready& m) {
    return {w::Body::Ready, w::CreateReady(b, m.version).Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const Commit& m) {
    return {w::Body::Commit, w::CreateCommit(b, m.version).Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const Abort& m) {
    return {w::Body::Abort, w::CreateAbort(b, m.version, str(m.reason)).Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const StatusRequest& m) {
    return {w::Body::StatusRequest,
            w::CreateStatusRequest(b, str(m.what), str(m.arguments_json)).Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const StatusReply& m) {
    return {w::Body::StatusReply, w::CreateStatusReply(b, str(m.json)).Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const ExpertCall& m) {
    std::vector<w::Assignment> assignments;
    assignments.reserve(m.assignments.size());
    for (const Assignment& a : m.assignments) assignments.emplace_back(a.token, a.expert, a.weight);
    return {w::Body::ExpertCall,
            w::CreateExpertCallDirect(b, m.call_id, m.layer, m.n_tokens, m.hidden, to_wire(m.dtype),
                                      &assignments, m.placement_version)
                .Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const ExpertResult& m) {
    return {w::Body::ExpertResult, w::CreateExpertResult(b, m.call_id, m.n_tokens, m.hidden,
                                                         to_wire(m.dtype), m.compute_us)
                                       .Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const ExpertWeightsRequest& m) {
    return {w::Body::ExpertWeightsRequest,
            w::CreateExpertWeightsRequest(b, m.layer, m.expert, m.offset, m.max_bytes).Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const ExpertWeightsChunk& m) {
    std::vector<uint8_t> hash(m.sha256.begin(), m.sha256.end());
    return {w::Body::ExpertWeightsChunk,
            w::CreateExpertWeightsChunkDirect(b, m.layer, m.expert, m.offset, m.length,
                                              m.total_bytes, &hash)
                .Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const Error& m) {
    return {w::Body::Error,
            w::CreateError(b, static_cast<w::ErrorCode>(m.code), str(m.message), m.in_reply_to)
                .Union()};
  }
  std::pair<w::Body, fb::Offset<void>> operator()(const Members& m) {
    std::vector<fb::Offset<w::MemberKey>> keys;
    for (const MemberKey& k : m.members) {
      keys.push_back(w::CreateMemberKey(b, str(k.node_id), str(k.key_name), str(k.public_key)));
    }
    auto list = b.CreateVector(keys);
    return {w::Body::Members, w::CreateMembers(b, m.version, list).Union()};
  }
};

// ---------------------------------------------------------------- decoding

// 40 characters of ZeroMQ's Z85 alphabet (common/net checks a key fully
// before any socket uses it).
bool looks_like_z85_key(const std::string& s) {
  static const std::string_view kAlphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return kAlphabet.find(c) != std::string_view::npos;
         });
}

class Decoder {
 public:
  explicit Decoder(const DecodeLimits& limits) : limits_(limits) {}

  Status string(const fb::String* s, std::string_view field, std::string* out,
                size_t limit = 0) const {
    if (s == nullptr) {
      out->clear();
      return Status::ok();
    }
    const size_t max = limit ? limit : limits_.max_string_bytes;
    if (s->size() > max) {
      return invalid_argument(std::string(field) + ": " + std::to_string(s->size()) +
                              " bytes exceeds the limit of " + std::to_string(max));
    }
    out->assign(s->data(), s->size());
    return Status::ok();
  }

  template <typename V>
  Status list_size(const V* v, std::string_view field) const {
    if (v != nullptr && v->size() > limits_.max_list_entries) {
      return invalid_argument(std::string(field) + ": " + std::to_string(v->size()) +
                              " entries exceeds the limit of " +
                              std::to_string(limits_.max_list_entries));
    }
    return Status::ok();
  }

  static Status non_negative(double v, std::string_view field) {
    if (!std::isfinite(v) || v < 0) {
      return invalid_argument(std::string(field) + " must be a finite number >= 0, got " +
                              std::to_string(v));
    }
    return Status::ok();
  }

  Status refs(const fb::Vector<const w::ExpertRef*>* v, std::string_view field,
              std::vector<ExpertRef>* out) const {
    DMOE_RETURN_IF_ERROR(list_size(v, field));
    out->clear();
    if (v == nullptr) return Status::ok();
    for (const w::ExpertRef* r : *v) out->push_back({r->layer(), r->expert()});  // widening
    return Status::ok();
  }

  static Result<DType> dtype(w::DType d, std::string_view field) {
    switch (d) {
      case w::DType::F32:
        return DType::kF32;
      case w::DType::F16:
        return DType::kF16;
      case w::DType::BF16:
        return DType::kBF16;
    }
    return invalid_argument(std::string(field) + ": unknown dtype " +
                            std::to_string(static_cast<int>(d)));
  }

  Status tokens_and_hidden(uint32_t n_tokens, uint32_t hidden, std::string_view what) const {
    if (n_tokens == 0 || n_tokens > limits_.max_tokens) {
      return invalid_argument(std::string(what) + ".n_tokens must be in [1, " +
                              std::to_string(limits_.max_tokens) + "], got " +
                              std::to_string(n_tokens));
    }
    if (hidden == 0 || hidden > limits_.max_hidden) {
      return invalid_argument(std::string(what) + ".hidden must be in [1, " +
                              std::to_string(limits_.max_hidden) + "], got " +
                              std::to_string(hidden));
    }
    return Status::ok();
  }

  Result<Body> body(const w::Envelope& e) const;

 private:
  // One per message with fields to check; body() dispatches on the type.
  Result<Body> decode_register(const w::Envelope& e) const;
  Result<Body> decode_register_reply(const w::Envelope& e) const;
  Result<Body> decode_heartbeat(const w::Envelope& e) const;
  Result<Body> decode_activation_report(const w::Envelope& e) const;
  Result<Body> decode_placement_prepare(const w::Envelope& e) const;
  Result<Body> decode_abort(const w::Envelope& e) const;
  Result<Body> decode_status_request(const w::Envelope& e) const;
  Result<Body> decode_status_reply(const w::Envelope& e) const;
  Result<Body> decode_expert_call(const w::Envelope& e) const;
  Result<Body> decode_expert_result(const w::Envelope& e) const;
  Result<Body> decode_expert_weights_request(const w::Envelope& e) const;
  Result<Body> decode_expert_weights_chunk(const w::Envelope& e) const;
  Result<Body> decode_error(const w::Envelope& e) const;
  Result<Body> decode_members(const w::Envelope& e) const;

  const DecodeLimits& limits_;
};

Result<Body> Decoder::decode_register(const w::Envelope& e) const {
  const w::Register* m = e.body_as_Register();
  Register r;
  DMOE_RETURN_IF_ERROR(string(m->node_id(), "Register.node_id", &r.node_id));
  DMOE_RETURN_IF_ERROR(string(m->model_id(), "Register.model_id", &r.model_id));
  DMOE_RETURN_IF_ERROR(list_size(m->devices(), "Register.devices"));
  if (m->devices()) {
    for (const w::DeviceInfo* d : *m->devices()) {
      DeviceInfo info;
      DMOE_RETURN_IF_ERROR(string(d->name(), "Register.devices.name", &info.name));
      DMOE_RETURN_IF_ERROR(string(d->kind(), "Register.devices.kind", &info.kind));
      info.expert_budget_bytes = d->expert_budget_bytes();
      info.load_bytes_per_s = d->load_bytes_per_s();
      DMOE_RETURN_IF_ERROR(
          non_negative(info.load_bytes_per_s, "Register.devices.load_bytes_per_s"));
      r.devices.push_back(std::move(info));
    }
  }
  r.host_memory_bytes = m->host_memory_bytes();
  DMOE_RETURN_IF_ERROR(
      string(m->expert_endpoint(), "Register.expert_endpoint", &r.expert_endpoint));
  DMOE_RETURN_IF_ERROR(string(m->http_endpoint(), "Register.http_endpoint", &r.http_endpoint));
  DMOE_RETURN_IF_ERROR(refs(m->resident(), "Register.resident", &r.resident));
  DMOE_RETURN_IF_ERROR(list_size(m->resident_devices(), "Register.resident_devices"));
  if (m->resident_devices()) {
    r.resident_devices.assign(m->resident_devices()->begin(), m->resident_devices()->end());
  }
  if (!r.resident_devices.empty() && r.resident_devices.size() != r.resident.size()) {
    return invalid_argument("Register.resident_devices has " +
                            std::to_string(r.resident_devices.size()) + " entries for " +
                            std::to_string(r.resident.size()) + " resident experts");
  }
  r.placement_version = m->placement_version();
  r.migration_headroom_bytes = m->migration_headroom_bytes();
  DMOE_RETURN_IF_ERROR(string(m->expert_type(), "Register.expert_type", &r.expert_type));
  DMOE_RETURN_IF_ERROR(list_size(m->expert_layer_bytes(), "Register.expert_layer_bytes"));
  if (m->expert_layer_bytes()) {
    r.expert_layer_bytes.assign(m->expert_layer_bytes()->begin(), m->expert_layer_bytes()->end());
  }
  r.expert_files_partial = m->expert_files_partial();
  DMOE_RETURN_IF_ERROR(refs(m->expert_files(), "Register.expert_files", &r.expert_files));
  if (!r.expert_files_partial && !r.expert_files.empty()) {
    return invalid_argument(
        "Register.expert_files lists experts but expert_files_partial is false");
  }
  DMOE_RETURN_IF_ERROR(string(m->role(), "Register.role", &r.role));
  if (!r.role.empty() && r.role != "experts") {
    return invalid_argument("Register.role: expected \"experts\" or empty, got \"" + r.role + "\"");
  }
  return Body(std::move(r));
}

Result<Body> Decoder::decode_register_reply(const w::Envelope& e) const {
  const w::RegisterReply* m = e.body_as_RegisterReply();
  RegisterReply r;
  r.accepted = m->accepted();
  DMOE_RETURN_IF_ERROR(string(m->reason(), "RegisterReply.reason", &r.reason));
  r.heartbeat_interval_ms = m->heartbeat_interval_ms();
  r.report_interval_ms = m->report_interval_ms();
  r.placement_version = m->placement_version();
  return Body(std::move(r));
}

Result<Body> Decoder::decode_heartbeat(const w::Envelope& e) const {
  const w::Heartbeat* m = e.body_as_Heartbeat();
  return Body(Heartbeat{m->placement_version(), m->requests_in_flight(), m->members_version()});
}

Result<Body> Decoder::decode_activation_report(const w::Envelope& e) const {
  const w::ActivationReport* m = e.body_as_ActivationReport();
  ActivationReport r;
  r.window_start_ms = m->window_start_ms();
  r.window_end_ms = m->window_end_ms();
  if (r.window_end_ms < r.window_start_ms) {
    return invalid_argument("ActivationReport window ends before it starts");
  }
  r.tokens = m->tokens();
  r.requests = m->requests();
  DMOE_RETURN_IF_ERROR(list_size(m->counts(), "ActivationReport.counts"));
  if (m->counts()) {
    r.counts.reserve(m->counts()->size());
    for (const w::ExpertCount* c : *m->counts()) {
      r.counts.push_back({c->layer(), c->expert(), c->count()});
    }
  }
  r.local_calls = m->local_calls();
  r.local_mean_latency_us = m->local_mean_latency_us();
  r.local_p99_latency_us = m->local_p99_latency_us();
  DMOE_RETURN_IF_ERROR(
      non_negative(r.local_mean_latency_us, "ActivationReport.local_mean_latency_us"));
  DMOE_RETURN_IF_ERROR(
      non_negative(r.local_p99_latency_us, "ActivationReport.local_p99_latency_us"));
  DMOE_RETURN_IF_ERROR(list_size(m->remote(), "ActivationReport.remote"));
  if (m->remote()) {
    for (const w::PeerCallStats* p : *m->remote()) {
      PeerCallStats s;
      DMOE_RETURN_IF_ERROR(string(p->peer(), "ActivationReport.remote.peer", &s.peer));
      s.calls = p->calls();
      s.mean_latency_us = p->mean_latency_us();
      s.p99_latency_us = p->p99_latency_us();
      DMOE_RETURN_IF_ERROR(
          non_negative(s.mean_latency_us, "ActivationReport.remote.mean_latency_us"));
      DMOE_RETURN_IF_ERROR(
          non_negative(s.p99_latency_us, "ActivationReport.remote.p99_latency_us"));
      s.bytes = p->bytes();
      s.failures = p->failures();
      r.remote.push_back(std::move(s));
    }
  }
  r.placement_version = m->placement_version();
  r.local_hits = m->local_hits();
  DMOE_RETURN_IF_ERROR(list_size(m->devices(), "ActivationReport.devices"));
  if (m->devices()) {
    for (const w::DeviceCompute* d : *m->devices()) {
      DeviceCompute c;
      DMOE_RETURN_IF_ERROR(string(d->device(), "ActivationReport.devices.device", &c.device));
      c.pairs = d->pairs();
      c.busy_us = d->busy_us();
      DMOE_RETURN_IF_ERROR(non_negative(c.busy_us, "ActivationReport.devices.busy_us"));
      r.devices.push_back(std::move(c));
    }
  }
  DMOE_RETURN_IF_ERROR(list_size(m->pairs(), "ActivationReport.pairs"));
  if (m->pairs()) {
    r.pairs.reserve(m->pairs()->size());
    for (const w::ExpertPair* p : *m->pairs()) {
      r.pairs.push_back({p->layer(), p->a(), p->b(), p->count()});
    }
  }
  return Body(std::move(r));
}

Result<Body> Decoder::decode_placement_prepare(const w::Envelope& e) const {
  const w::PlacementPrepare* m = e.body_as_PlacementPrepare();
  PlacementPrepare p;
  p.version = m->version();
  DMOE_RETURN_IF_ERROR(list_size(m->nodes(), "PlacementPrepare.nodes"));
  if (m->nodes()) {
    for (const w::NodePlacement* n : *m->nodes()) {
      NodePlacement node;
      DMOE_RETURN_IF_ERROR(string(n->node_id(), "PlacementPrepare.nodes.node_id", &node.node_id));
      DMOE_RETURN_IF_ERROR(string(n->expert_endpoint(), "PlacementPrepare.nodes.expert_endpoint",
                                  &node.expert_endpoint));
      DMOE_RETURN_IF_ERROR(list_size(n->devices(), "PlacementPrepare.nodes.devices"));
      if (n->devices()) {
        for (const w::DevicePlacement* d : *n->devices()) {
          DevicePlacement device;
          DMOE_RETURN_IF_ERROR(
              string(d->device(), "PlacementPrepare.devices.device", &device.device));
          DMOE_RETURN_IF_ERROR(
              refs(d->experts(), "PlacementPrepare.devices.experts", &device.experts));
          node.devices.push_back(std::move(device));
        }
      }
      p.nodes.push_back(std::move(node));
    }
  }
  return Body(std::move(p));
}

Result<Body> Decoder::decode_abort(const w::Envelope& e) const {
  Abort a;
  a.version = e.body_as_Abort()->version();
  DMOE_RETURN_IF_ERROR(string(e.body_as_Abort()->reason(), "Abort.reason", &a.reason));
  return Body(std::move(a));
}

Result<Body> Decoder::decode_status_request(const w::Envelope& e) const {
  StatusRequest r;
  DMOE_RETURN_IF_ERROR(string(e.body_as_StatusRequest()->what(), "StatusRequest.what", &r.what));
  DMOE_RETURN_IF_ERROR(string(e.body_as_StatusRequest()->arguments_json(),
                              "StatusRequest.arguments_json", &r.arguments_json,
                              limits_.max_json_bytes));
  return Body(std::move(r));
}

Result<Body> Decoder::decode_status_reply(const w::Envelope& e) const {
  StatusReply r;
  DMOE_RETURN_IF_ERROR(
      string(e.body_as_StatusReply()->json(), "StatusReply.json", &r.json, limits_.max_json_bytes));
  return Body(std::move(r));
}

Result<Body> Decoder::decode_expert_call(const w::Envelope& e) const {
  const w::ExpertCall* m = e.body_as_ExpertCall();
  ExpertCall c;
  c.call_id = m->call_id();
  c.layer = m->layer();
  c.n_tokens = m->n_tokens();
  c.hidden = m->hidden();
  DMOE_RETURN_IF_ERROR(tokens_and_hidden(c.n_tokens, c.hidden, "ExpertCall"));
  DMOE_ASSIGN_OR_RETURN(c.dtype, dtype(m->dtype(), "ExpertCall.dtype"));
  DMOE_RETURN_IF_ERROR(list_size(m->assignments(), "ExpertCall.assignments"));
  if (m->assignments() == nullptr || m->assignments()->size() == 0) {
    return invalid_argument("ExpertCall has no assignments");
  }
  c.assignments.reserve(m->assignments()->size());
  for (const w::Assignment* a : *m->assignments()) {
    if (a->token() >= c.n_tokens) {
      return invalid_argument("ExpertCall assignment names token " + std::to_string(a->token()) +
                              " of a call with " + std::to_string(c.n_tokens) + " tokens");
    }
    if (!std::isfinite(a->weight())) {
      return invalid_argument("ExpertCall assignment weight is not finite");
    }
    c.assignments.push_back({a->token(), a->expert(), a->weight()});
  }
  c.placement_version = m->placement_version();
  return Body(std::move(c));
}

Result<Body> Decoder::decode_expert_result(const w::Envelope& e) const {
  const w::ExpertResult* m = e.body_as_ExpertResult();
  ExpertResult r;
  r.call_id = m->call_id();
  r.n_tokens = m->n_tokens();
  r.hidden = m->hidden();
  DMOE_RETURN_IF_ERROR(tokens_and_hidden(r.n_tokens, r.hidden, "ExpertResult"));
  DMOE_ASSIGN_OR_RETURN(r.dtype, dtype(m->dtype(), "ExpertResult.dtype"));
  r.compute_us = m->compute_us();
  return Body(std::move(r));
}

Result<Body> Decoder::decode_expert_weights_request(const w::Envelope& e) const {
  const w::ExpertWeightsRequest* m = e.body_as_ExpertWeightsRequest();
  if (m->max_bytes() == 0) return invalid_argument("ExpertWeightsRequest.max_bytes is 0");
  return Body(ExpertWeightsRequest{m->layer(), m->expert(), m->offset(), m->max_bytes()});
}

Result<Body> Decoder::decode_expert_weights_chunk(const w::Envelope& e) const {
  const w::ExpertWeightsChunk* m = e.body_as_ExpertWeightsChunk();
  ExpertWeightsChunk c;
  c.layer = m->layer();
  c.expert = m->expert();
  c.offset = m->offset();
  c.length = m->length();
  c.total_bytes = m->total_bytes();
  if (c.offset > c.total_bytes || c.length > c.total_bytes - c.offset) {
    return invalid_argument("ExpertWeightsChunk [" + std::to_string(c.offset) + ", +" +
                            std::to_string(c.length) + ") runs past the expert's " +
                            std::to_string(c.total_bytes) + " bytes");
  }
  if (m->sha256() == nullptr || m->sha256()->size() != 32) {
    return invalid_argument("ExpertWeightsChunk.sha256 must be 32 bytes");
  }
  std::copy(m->sha256()->begin(), m->sha256()->end(), c.sha256.begin());
  return Body(std::move(c));
}

Result<Body> Decoder::decode_error(const w::Envelope& e) const {
  const w::Error* m = e.body_as_Error();
  Error err;
  const uint16_t code = static_cast<uint16_t>(m->code());
  err.code = code <= static_cast<uint16_t>(StatusCode::kInternal) && code != 0
                 ? static_cast<StatusCode>(code)
                 : StatusCode::kInternal;
  DMOE_RETURN_IF_ERROR(string(m->message(), "Error.message", &err.message));
  err.in_reply_to = m->in_reply_to();
  return Body(std::move(err));
}

Result<Body> Decoder::decode_members(const w::Envelope& e) const {
  const w::Members* m = e.body_as_Members();
  Members out;
  out.version = m->version();
  DMOE_RETURN_IF_ERROR(list_size(m->members(), "Members.members"));
  if (m->members()) {
    for (const w::MemberKey* k : *m->members()) {
      MemberKey key;
      DMOE_RETURN_IF_ERROR(string(k->node_id(), "Members.members.node_id", &key.node_id));
      DMOE_RETURN_IF_ERROR(string(k->key_name(), "Members.members.key_name", &key.key_name));
      DMOE_RETURN_IF_ERROR(string(k->public_key(), "Members.members.public_key", &key.public_key));
      if (!looks_like_z85_key(key.public_key)) {
        return invalid_argument("Members.members.public_key of '" + key.key_name +
                                "': expected 40 Z85 characters");
      }
      out.members.push_back(std::move(key));
    }
  }
  return Body(std::move(out));
}

Result<Body> Decoder::body(const w::Envelope& e) const {
  // The verifier accepts a union type without its value (the value field is
  // optional), so every body_as_X() below would be null.
  if (e.body() == nullptr) {
    return invalid_argument("envelope declares body type " +
                            std::to_string(static_cast<int>(e.body_type())) + " but has no body");
  }
  switch (e.body_type()) {
    case w::Body::Register:
      return decode_register(e);
    case w::Body::RegisterReply:
      return decode_register_reply(e);
    case w::Body::Heartbeat:
      return decode_heartbeat(e);
    case w::Body::ActivationReport:
      return decode_activation_report(e);
    case w::Body::Ack:
      return Body(Ack{e.body_as_Ack()->sequence()});
    case w::Body::PlacementPrepare:
      return decode_placement_prepare(e);
    case w::Body::Ready:
      return Body(Ready{e.body_as_Ready()->version()});
    case w::Body::Commit:
      return Body(Commit{e.body_as_Commit()->version()});
    case w::Body::Abort:
      return decode_abort(e);
    case w::Body::StatusRequest:
      return decode_status_request(e);
    case w::Body::StatusReply:
      return decode_status_reply(e);
    case w::Body::ExpertCall:
      return decode_expert_call(e);
    case w::Body::ExpertResult:
      return decode_expert_result(e);
    case w::Body::ExpertWeightsRequest:
      return decode_expert_weights_request(e);
    case w::Body::ExpertWeightsChunk:
      return decode_expert_weights_chunk(e);
    case w::Body::Error:
      return decode_error(e);
    case w::Body::Members:
      return decode_members(e);
    case w::Body::NONE:
      break;
  }
  return invalid_argument("envelope has no body or an unknown body type " +
                          std::to_string(static_cast<int>(e.body_type())));
}

}  // namespace

std::string_view body_name(const Body& body) {
  static const char* const kNames[] = {"Register",
                                       "RegisterReply",
                                       "Heartbeat",
                                       "ActivationReport",
                                       "Ack",
                                       "PlacementPrepare",
                                       "Ready",
                                       "Commit",
                                       "Abort",
                                       "StatusRequest",
                                       "StatusReply",
                                       "ExpertCall",
                                       "ExpertResult",
                                       "ExpertWeightsRequest",
                                       "ExpertWeightsChunk",
                                       "Error",
                                       "Members"};
  static_assert(std::size(kNames) == std::variant_size_v<Body>);
  return kNames[body.index()];
}

std::vector<uint8_t> encode(const Envelope& envelope) {
  fb::FlatBufferBuilder b(256);
  auto [type, body] = std::visit(Encoder{b}, envelope.body);
  auto cluster = b.CreateString(envelope.cluster_id);
  auto sender = b.CreateString(envelope.sender);
  w::EnvelopeBuilder eb(b);
  eb.add_protocol_major(envelope.protocol_major);
  eb.add_protocol_minor(envelope.protocol_minor);
  eb.add_cluster_id(cluster);
  eb.add_sender(sender);
  eb.add_sequence(envelope.sequence);
  eb.add_body_type(type);
  eb.add_body(body);
  b.Finish(eb.Finish());
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

Result<Envelope> decode(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  if (bytes.size() > limits.max_envelope_bytes) {
    return invalid_argument("message of " + std::to_string(bytes.size()) +
                            " bytes exceeds the limit of " +
                            std::to_string(limits.max_envelope_bytes));
  }
  if (bytes.size() < 8) {
    return invalid_argument("message of " + std::to_string(bytes.size()) +
                            " bytes is too short to be an envelope");
  }
  fb::Verifier verifier(bytes.data(), bytes.size(),
                        /*max_depth=*/16, /*max_tables=*/static_cast<fb::uoffset_t>(1u << 22));
  if (!w::VerifyEnvelopeBuffer(verifier)) {
    return invalid_argument(
        "message failed FlatBuffers verification (truncated or not an envelope)");
  }
  const w::Envelope* e = w::GetEnvelope(bytes.data());
  Envelope out;
  out.protocol_major = e->protocol_major();
  out.protocol_minor = e->protocol_minor();
  if (out.protocol_major != kProtocolMajor) {
    return version_mismatch("peer speaks protocol " + std::to_string(out.protocol_major) + "." +
                            std::to_string(out.protocol_minor) + ", this build speaks " +
                            std::to_string(kProtocolMajor) + "." + std::to_string(kProtocolMinor));
  }
  Decoder decoder(limits);
  DMOE_RETURN_IF_ERROR(decoder.string(e->cluster_id(), "Envelope.cluster_id", &out.cluster_id));
  DMOE_RETURN_IF_ERROR(decoder.string(e->sender(), "Envelope.sender", &out.sender));
  out.sequence = e->sequence();
  DMOE_ASSIGN_OR_RETURN(out.body, decoder.body(*e));
  return out;
}

std::optional<uint64_t> peek_sequence(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  if (bytes.size() > limits.max_envelope_bytes || bytes.size() < 8) return std::nullopt;
  fb::Verifier verifier(bytes.data(), bytes.size(),
                        /*max_depth=*/16, /*max_tables=*/static_cast<fb::uoffset_t>(1u << 22));
  if (!w::VerifyEnvelopeBuffer(verifier)) return std::nullopt;
  return w::GetEnvelope(bytes.data())->sequence();
}

Status check_tensor_payload(DType dtype, uint32_t n_tokens, uint32_t hidden, size_t payload_bytes,
                            std::string_view what) {
  const uint64_t expected = static_cast<uint64_t>(n_tokens) * hidden * dtype_size_bytes(dtype);
  if (payload_bytes != expected) {
    return invalid_argument(std::string(what) + ": tensor frame of " +
                            std::to_string(payload_bytes) + " bytes, but " +
                            std::to_string(n_tokens) + " x " + std::to_string(hidden) + " " +
                            std::string(dtype_name(dtype)) + " needs " + std::to_string(expected));
  }
  return Status::ok();
}

}  // namespace dancemoe::proto
