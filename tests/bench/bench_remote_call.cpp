// Remote expert call overhead (issue 5): the per-layer ExpertCall round trip
// on loopback -- through the real expert service (ROUTER frontend, worker
// thread, validation, bf16 conversion, FlatBuffers envelopes) -- against a
// bare ZeroMQ DEALER/ROUTER ping-pong of the same bytes, in the same run.
// The expert compute itself is not network overhead: the service reports it
// (ExpertResult.compute_us) and it is subtracted; the full round trip is
// printed too. Target: overhead median / ping-pong median <= 1.3.
//
// CurveZMQ (issue 13, docs/security.md): the same calls through a service
// whose socket is a CURVE server behind a ZAP handler, from a CURVE client
// -- interleaved in blocks with the plain calls in the same run, so both
// see the same machine. Target: overhead with CURVE <= 1.15x without.
//
//   build/release/tests/bench_remote_call [--model DIR] [--tokens 1] [--iterations 2000]
//                                     [--workers 1]   (2+: hand-off to worker threads)
//
// On a shared machine, run it as `chrt -f 10 build/release/tests/bench_remote_call`
// (SCHED_FIFO): other processes' bursts then no longer land on one side of
// the comparison (without it, medians here swung by milliseconds).
//
// Without --model, the medium preset is generated (once) under the build tree.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "common/inference/expert_store.h"
#include "common/model/checkpoint.h"
#include "common/model/synthetic/synthetic_model.h"
#include "common/net/curve_keys.h"
#include "common/net/zap_handler.h"
#include "common/net/zmq_transport.h"
#include "edge_node/expert_service/expert_service.h"
#include "edge_node/remote/wire_tensor.h"
#include "tests/bench/bench_models.h"

using namespace dancemoe;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}
double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

struct Samples {
  std::vector<double> rtt_us, overhead_us, compute_us;
  double cpu_us = 0;  // process CPU time (user + system) over the recorded calls
  int64_t n_cpu = 0;  // calls it covers
};

// User + system CPU time of the whole process (the caller and the service's
// threads), microseconds. Unlike wall time it does not grow while a thread
// waits for a core other processes hold, so it still compares on a loaded
// machine.
double process_cpu_us() {
  rusage r{};
  ::getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

// Sends one layer's call over and over and records what each took.
struct Caller {
  proto::ExpertCall call;
  std::vector<uint8_t> payload;
  uint64_t next_id = 0;
  size_t request_bytes = 0;
  size_t reply_bytes = 0;

  // `n` calls on `dealer`, recorded into `out` (null: a warm-up); false on a
  // failed or unexpected answer.
  bool run(zmq::socket_t& dealer, int n, Samples* out) {
    proto::Envelope envelope;
    envelope.sender = "bench";
    const double cpu_start = process_cpu_us();
    for (int i = 0; i < n; ++i) {
      call.call_id = ++next_id;
      envelope.sequence = call.call_id;
      envelope.body = call;
      const Clock::time_point start = Clock::now();
      if (!net::send_message(dealer, envelope, payload).is_ok()) return false;
      auto reply = net::receive_message(dealer, std::chrono::seconds(10), false);
      const double us = us_since(start);
      if (!reply || !reply->envelope.is_ok()) return false;
      const auto* result = std::get_if<proto::ExpertResult>(&reply->envelope->body);
      if (result == nullptr) {
        std::fprintf(stderr, "unexpected reply: %s\n",
                     std::string(proto::body_name(reply->envelope->body)).c_str());
        return false;
      }
      request_bytes = proto::encode(envelope).size() + payload.size();
      reply_bytes = proto::encode(*reply->envelope).size() + reply->payload.size();
      if (out == nullptr) continue;
      out->rtt_us.push_back(us);
      out->compute_us.push_back(result->compute_us);
      out->overhead_us.push_back(us - result->compute_us);
    }
    if (out != nullptr) {
      out->cpu_us += process_cpu_us() - cpu_start;
      out->n_cpu += n;
    }
    return true;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path model_dir = std::filesystem::path(DMOE_BUILD_DIR) / "bench-models/medium";
  int n_tokens = 1;
  int iterations = 2000;
  int workers = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model")) model_dir = argv[i + 1];
    if (!std::strcmp(argv[i], "--tokens")) n_tokens = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--iterations")) iterations = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--workers")) workers = std::stoi(argv[i + 1]);
  }
  if (!bench::ensure_preset("medium", model_dir)) return 1;
  auto checkpoint = Checkpoint::open(model_dir);
  if (!checkpoint.is_ok()) {
    std::fprintf(stderr, "%s\n", checkpoint.status().to_string().c_str());
    return 1;
  }
  const ModelConfig& config = (*checkpoint)->config();
  const int64_t hidden = config.hidden_size;
  const int64_t top_k = config.n_experts_per_token;
  int32_t layer = 0;
  while (!config.layer_is_moe[static_cast<size_t>(layer)]) ++layer;
  ExpertStore store(**checkpoint);
  for (int32_t e = 0; e < config.n_experts; ++e) {
    if (Status s = store.load({layer, e}); !s.is_ok()) {
      std::fprintf(stderr, "%s\n", s.to_string().c_str());
      return 1;
    }
  }

  // Keys: the service's, and the caller's, which is the one member.
  const Result<net::CurveKeyPair> server_keys = net::generate_key_pair();
  const Result<net::CurveKeyPair> client_keys = net::generate_key_pair();
  if (!server_keys.is_ok() || !client_keys.is_ok()) {
    std::fprintf(stderr, "CURVE keys: %s\n", server_keys.status().to_string().c_str());
    return 1;
  }
  auto members = std::make_shared<node::MemberKeys>(*server_keys);
  proto::Members member_list;
  member_list.version = 1;
  member_list.members.push_back({"bench", "bench", client_keys->public_key});
  members->replace(member_list);

  zmq::context_t context;
  auto zap = net::ZapHandler::start(context, members->allowlist());
  if (!zap.is_ok()) {
    std::fprintf(stderr, "%s\n", zap.status().to_string().c_str());
    return 1;
  }
  node::ExpertServiceOptions service_options;
  service_options.bind_endpoint = "tcp://127.0.0.1:*";
  service_options.threads_per_worker = 1;
  service_options.n_workers = workers;  // 1: computed on the receiving thread
  auto service = node::ExpertService::start(context, config, store, service_options);
  service_options.members = members;
  auto secure_service = node::ExpertService::start(context, config, store, service_options);
  if (!service.is_ok() || !secure_service.is_ok()) {
    std::fprintf(stderr, "%s %s\n", service.status().to_string().c_str(),
                 secure_service.status().to_string().c_str());
    return 1;
  }

  // One layer's call as a node sends it at decode: n_tokens x top-k
  // assignments, hidden states in bf16.
  std::mt19937 rng(1);
  Caller caller;
  proto::ExpertCall& call = caller.call;
  call.layer = static_cast<uint16_t>(layer);
  call.n_tokens = static_cast<uint32_t>(n_tokens);
  call.hidden = static_cast<uint32_t>(hidden);
  call.dtype = DType::kBF16;
  for (int t = 0; t < n_tokens; ++t) {
    std::vector<int> experts(static_cast<size_t>(config.n_experts));
    for (int e = 0; e < config.n_experts; ++e) experts[static_cast<size_t>(e)] = e;
    std::shuffle(experts.begin(), experts.end(), rng);
    for (int k = 0; k < top_k; ++k) {
      call.assignments.push_back({static_cast<uint32_t>(t),
                                  static_cast<uint16_t>(experts[static_cast<size_t>(k)]),
                                  1.0f / static_cast<float>(top_k)});
    }
  }
  std::vector<float> x(static_cast<size_t>(n_tokens * hidden));
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  node::encode_rows(x.data(), n_tokens, hidden, DType::kBF16, &caller.payload);

  auto dealer = net::make_socket(context, zmq::socket_type::dealer);
  net::SocketOptions secure_options;
  secure_options.curve = net::CurveOptions{*client_keys, server_keys->public_key};
  auto secure_dealer = net::make_socket(context, zmq::socket_type::dealer, secure_options);
  if (!dealer.is_ok() || !net::connect(*dealer, (*service)->bound_endpoint()).is_ok()) return 1;
  if (!secure_dealer.is_ok() ||
      !net::connect(*secure_dealer, (*secure_service)->bound_endpoint()).is_ok()) {
    return 1;
  }
  Samples plain, secure;
  // Warm-up on both, then alternating blocks: plain, CURVE, plain, ...
  if (!caller.run(*dealer, 100, nullptr) || !caller.run(*secure_dealer, 100, nullptr)) return 1;
  // Short blocks, many of them: a burst of load from elsewhere on the
  // machine then falls on both kinds of call alike.
  const int kBlocks = std::max(1, iterations / 20);
  for (int b = 0; b < 2 * kBlocks; ++b) {
    const bool curve = b % 2 == 1;
    if (!caller.run(curve ? *secure_dealer : *dealer, iterations / kBlocks,
                    curve ? &secure : &plain)) {
      return 1;
    }
  }
  const size_t request_bytes = caller.request_bytes;
  const size_t reply_bytes = caller.reply_bytes;
  (*service)->stop();
  (*secure_service)->stop();
  const std::vector<double>& rtt_us = plain.rtt_us;
  const std::vector<double>& overhead_us = plain.overhead_us;
  const std::vector<double>& compute_us = plain.compute_us;

  // Bare ping-pong of the same bytes: a ROUTER echo thread answering every
  // message with one of the reply's size, nothing else -- at once, and
  // (second baseline) after spinning for the expert compute's median time,
  // so the caller waits as long as for a real call: on a virtual machine a
  // thread that waited ~1 ms wakes up much more slowly than one that waited
  // ~50 us, and that cost is the machine's, not the service's.
  auto ping_pong = [&](double busy_us) -> std::vector<double> {
    auto router = net::make_socket(context, zmq::socket_type::router);
    auto client = net::make_socket(context, zmq::socket_type::dealer);
    if (!router.is_ok() || !client.is_ok() || !net::bind(*router, "tcp://127.0.0.1:*").is_ok())
      return {};
    if (!net::connect(*client, net::last_endpoint(*router)).is_ok()) return {};
    std::thread echo([&] {
      std::vector<uint8_t> answer(reply_bytes, 7);
      for (int i = 0; i < iterations + 100; ++i) {
        zmq::message_t id, body;
        if (!router->recv(id) || !router->recv(body)) return;
        const Clock::time_point until =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double, std::micro>(busy_us));
        while (Clock::now() < until) {
        }
        router->send(id, zmq::send_flags::sndmore);
        router->send(zmq::buffer(answer), zmq::send_flags::none);
      }
    });
    std::vector<uint8_t> request(request_bytes, 3);
    std::vector<double> out;
    for (int i = 0; i < iterations + 100; ++i) {
      const Clock::time_point start = Clock::now();
      client->send(zmq::buffer(request), zmq::send_flags::none);
      zmq::message_t answer;
      if (!client->recv(answer)) break;
      if (i >= 100) out.push_back(us_since(start) - busy_us);
    }
    echo.join();
    return out;
  };
  const std::vector<double> ping_us = ping_pong(0);
  const std::vector<double> busy_ping_us = ping_pong(median(compute_us));
  if (ping_us.empty() || busy_ping_us.empty()) return 1;

  const double ratio = median(overhead_us) / median(ping_us);
  std::printf(
      "medium preset, layer %d: %d token(s) x top-%lld experts, request %zu bytes, reply %zu "
      "bytes, %d iterations\n",
      layer, n_tokens, static_cast<long long>(top_k), request_bytes, reply_bytes, iterations);
  std::printf("%-44s %10s %10s\n", "", "median us", "p90 us");
  std::printf("%-44s %10.1f %10.1f\n", "bare ZeroMQ ping-pong, same bytes", median(ping_us),
              quantile(ping_us, 0.9));
  std::printf("%-44s %10.1f %10.1f\n", "ExpertCall round trip minus expert compute",
              median(overhead_us), quantile(overhead_us, 0.9));
  std::printf("%-44s %10.1f %10.1f\n", "  expert compute (reported by the service)",
              median(compute_us), quantile(compute_us, 0.9));
  std::printf("%-44s %10.1f %10.1f\n", "  full ExpertCall round trip", median(rtt_us),
              quantile(rtt_us, 0.9));
  std::printf("%-44s %10.1f %10.1f\n", "ping-pong, echo busy for the compute time (minus it)",
              median(busy_ping_us), quantile(busy_ping_us, 0.9));
  std::printf("overhead ratio (call minus compute / ping-pong): %.2f  (target <= 1.3)\n", ratio);
  std::printf("overhead ratio against the ping-pong that waits as long: %.2f\n",
              median(overhead_us) / median(busy_ping_us));
  std::printf("\nCurveZMQ, %d calls each, interleaved in %d blocks of %d:\n", iterations, kBlocks,
              iterations / kBlocks);
  std::printf("%-44s %10s %10s\n", "", "median us", "p90 us");
  std::printf("%-44s %10.1f %10.1f\n", "plain: call minus expert compute", median(overhead_us),
              quantile(overhead_us, 0.9));
  std::printf("%-44s %10.1f %10.1f\n", "CURVE: call minus expert compute",
              median(secure.overhead_us), quantile(secure.overhead_us, 0.9));
  std::printf("%-44s %10.1f %10.1f\n", "plain: expert compute", median(compute_us),
              quantile(compute_us, 0.9));
  std::printf("%-44s %10.1f %10.1f\n", "CURVE: expert compute", median(secure.compute_us),
              quantile(secure.compute_us, 0.9));
  std::printf("%-44s %10.1f %10.1f\n", "plain: full round trip", median(rtt_us),
              quantile(rtt_us, 0.9));
  std::printf("%-44s %10.1f %10.1f\n", "CURVE: full round trip", median(secure.rtt_us),
              quantile(secure.rtt_us, 0.9));
  std::printf("CURVE overhead ratio (call minus compute, CURVE / plain): %.3f  (target <= 1.15)\n",
              median(secure.overhead_us) / median(overhead_us));
  std::printf("CURVE full round-trip ratio (CURVE / plain): %.3f\n",
              median(secure.rtt_us) / median(rtt_us));
  std::printf("CURVE cost per call (median difference of the overheads): %.1f us\n",
              median(secure.overhead_us) - median(overhead_us));
  // The same in CPU time, which a loaded machine does not inflate: per call,
  // process CPU minus the expert compute (the service's, also CPU).
  const double cpu_plain = plain.cpu_us / static_cast<double>(plain.n_cpu);
  const double cpu_curve = secure.cpu_us / static_cast<double>(secure.n_cpu);
  std::printf("process CPU per call: plain %.1f us, CURVE %.1f us (CURVE costs %.1f us)\n",
              cpu_plain, cpu_curve, cpu_curve - cpu_plain);
  std::printf("CPU overhead ratio ((CPU per call - compute), CURVE / plain): %.3f\n",
              (cpu_curve - median(secure.compute_us)) / (cpu_plain - median(compute_us)));
  return 0;
}
