#include "edge_node/expert_service/expert_service.h"

#include <spdlog/spdlog.h>

#include <zmq_addon.hpp>

#include "common/backend/cpu/cpu_expert_engine.h"
#include "common/net/poller.h"
#include "common/net/zmq_transport.h"
#include "common/runtime/thread_pool.h"

namespace dancemoe::node {
namespace {

std::atomic<uint64_t> g_service_instance{0};

constexpr std::chrono::milliseconds kPollInterval{100};  // how often stop() is noticed

}  // namespace

struct ExpertService::Job {
  std::string routing_id;
  Result<proto::Envelope> envelope = proto::Envelope{};
  std::vector<uint8_t> payload;
};

ExpertService::ExpertService(zmq::context_t& context, const ModelConfig& config,
                             const ExpertStore& store, ExpertServiceOptions options)
    : context_(context),
      config_(config),
      store_(store),
      options_(std::move(options)),
      blobs_(store) {}

Result<std::unique_ptr<ExpertService>> ExpertService::start(zmq::context_t& context,
                                                            const ModelConfig& config,
                                                            const ExpertStore& store,
                                                            ExpertServiceOptions options) {
  if (options.n_workers < 1) return invalid_argument("expert service needs at least one worker");
  std::unique_ptr<ExpertService> s(new ExpertService(context, config, store, std::move(options)));
  net::SocketOptions router_options;
  // Bound what one inbound message may make us allocate: the largest valid
  // call (f32 hidden states plus its assignments) with room for the envelope.
  const int64_t max_tokens = s->options_.limits.max_call_tokens;
  router_options.max_message_bytes =
      max_tokens * config.hidden_size * 4 +
      max_tokens * std::max<int64_t>(config.n_experts_per_token, 1) * 16 + (int64_t{1} << 20);
  router_options.send_timeout = std::chrono::milliseconds(1000);
  if (s->options_.members) router_options.curve = s->options_.members->server_options();
  DMOE_ASSIGN_OR_RETURN(zmq::socket_t router,
                        net::make_socket(context, zmq::socket_type::router, router_options));
  DMOE_RETURN_IF_ERROR(net::bind(router, s->options_.bind_endpoint).with_context("--experts"));
  s->bound_endpoint_ = net::last_endpoint(router);
  if (s->options_.n_workers == 1) {
    s->frontend_ = std::thread(
        [raw = s.get(), r = std::move(router)]() mutable { raw->inline_loop(std::move(r)); });
    return s;
  }
  s->replies_endpoint_ =
      "inproc://dmoe-expert-replies-" + std::to_string(g_service_instance.fetch_add(1));
  DMOE_ASSIGN_OR_RETURN(zmq::socket_t replies,
                        net::make_socket(context, zmq::socket_type::pull, {}));
  DMOE_RETURN_IF_ERROR(net::bind(replies, s->replies_endpoint_));
  for (int w = 0; w < s->options_.n_workers; ++w) {
    s->workers_.emplace_back([raw = s.get(), w] { raw->worker_loop(w); });
  }
  s->frontend_ =
      std::thread([raw = s.get(), r = std::move(router), p = std::move(replies)]() mutable {
        raw->frontend_loop(std::move(r), std::move(p));
      });
  return s;
}

ExpertService::~ExpertService() { stop(); }

void ExpertService::stop() {
  stopping_.store(true);
  ready_.notify_all();
  if (frontend_.joinable()) frontend_.join();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

void ExpertService::frontend_loop(zmq::socket_t router, zmq::socket_t replies) {
  const proto::DecodeLimits limits;
  net::Poller poller;
  const size_t from_peers = poller.add(router);
  const size_t from_workers = poller.add(replies);
  while (!stopping_.load()) {
    Result<bool> ready = poller.wait(kPollInterval);
    if (!ready.is_ok()) {
      spdlog::error("expert service: {}", ready.status().message());
      return;
    }
    if (!*ready) continue;
    if (poller.readable(from_workers)) {
      // A worker's reply: [routing id][envelope][payload?], forwarded as is.
      Result<bool> relayed = net::relay_message(replies, router);
      if (!relayed.is_ok()) {
        // EHOSTUNREACH: the caller went away before its answer; nothing to do.
        spdlog::debug("expert service: reply not delivered: {}", relayed.status().message());
      }
    }
    if (poller.readable(from_peers)) {
      std::optional<net::ReceivedMessage> m =
          net::receive_message(router, std::chrono::milliseconds(0), /*router=*/true, limits);
      if (!m || !admitted(*m)) continue;
      auto job = std::make_unique<Job>();
      job->routing_id = std::move(m->routing_id);
      job->envelope = std::move(m->envelope);
      job->payload = std::move(m->payload);
      bool full = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        full = queue_.size() >= options_.max_queued;
        if (!full) queue_.push_back(std::move(job));
      }
      if (full) {
        send_overloaded(router, *job);
      } else {
        ready_.notify_one();
      }
    }
  }
}

Result<std::unique_ptr<ExpertComputer>> ExpertService::new_computer() const {
  if (options_.make_computer) return options_.make_computer();
  return std::make_unique<ExpertComputer>(std::make_unique<backend::CpuExpertEngine>(
      std::make_unique<ThreadPool>(options_.threads_per_worker), options_.precision));
}

bool ExpertService::admitted(const net::ReceivedMessage& m) {
  const MemberKeys* members = options_.members.get();
  if (members == nullptr || !members->secure()) return true;
  if (!m.sender_key.empty() && members->allowlist()->contains(m.sender_key)) return true;
  counters_.refused.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void ExpertService::send_overloaded(zmq::socket_t& router, const Job& job) {
  counters_.errors.fetch_add(1, std::memory_order_relaxed);
  proto::Envelope e;
  e.cluster_id = options_.identity.cluster_id;
  e.sender = options_.identity.node_id;
  const uint64_t seq = job.envelope.is_ok() ? job.envelope->sequence : 0;
  e.body =
      proto::Error{StatusCode::kResourceExhausted,
                   "expert service of node '" + options_.identity.node_id + "' is overloaded (" +
                       std::to_string(options_.max_queued) + " messages queued); retry elsewhere",
                   seq};
  (void)net::send_message(router, e, {}, job.routing_id);
}

void ExpertService::inline_loop(zmq::socket_t router) {
  Result<std::unique_ptr<ExpertComputer>> computer = new_computer();
  if (!computer.is_ok()) {
    spdlog::error("expert service: {}", computer.status().to_string());
    return;
  }
  ExpertRequestHandler handler(config_, store_, blobs_, **computer, options_.identity,
                               options_.limits, counters_);
  const proto::DecodeLimits limits;
  std::deque<Job> pending;
  std::vector<ExpertRequestHandler::Inbound> batch;
  std::vector<Reply> replies;
  while (!stopping_.load()) {
    // Wait only when there is nothing to compute; then take everything that
    // has arrived, refusing what does not fit in the queue.
    std::chrono::milliseconds wait = pending.empty() ? kPollInterval : std::chrono::milliseconds(0);
    while (std::optional<net::ReceivedMessage> m =
               net::receive_message(router, wait, /*router=*/true, limits)) {
      wait = std::chrono::milliseconds(0);
      if (m->routing_id.empty()) continue;  // an interrupted receive, not a message
      if (!admitted(*m)) continue;
      Job job;
      job.routing_id = std::move(m->routing_id);
      job.envelope = std::move(m->envelope);
      job.payload = std::move(m->payload);
      if (pending.size() >= options_.max_queued) {
        send_overloaded(router, job);
      } else {
        pending.push_back(std::move(job));
      }
    }
    if (pending.empty()) continue;
    // Everything that arrived together is computed together: the calls of
    // one layer from several peers share each expert's weight reads.
    batch.clear();
    for (const Job& job : pending) batch.push_back({&job.envelope, job.payload});
    handler.handle_many(batch, &replies);
    for (size_t i = 0; i < pending.size(); ++i) {
      Status sent =
          net::send_message(router, replies[i].envelope, replies[i].payload, pending[i].routing_id);
      // EHOSTUNREACH: the caller went away before its answer; nothing to do.
      if (!sent.is_ok()) spdlog::debug("expert service: reply not delivered: {}", sent.to_string());
    }
    pending.clear();
  }
}

void ExpertService::worker_loop(int worker_idx) {
  Result<zmq::socket_t> push = net::make_socket(context_, zmq::socket_type::push, {});
  if (!push.is_ok() || !net::connect(*push, replies_endpoint_).is_ok()) {
    spdlog::error("expert service worker {}: cannot connect its reply socket", worker_idx);
    return;
  }
  Result<std::unique_ptr<ExpertComputer>> computer = new_computer();
  if (!computer.is_ok()) {
    spdlog::error("expert service worker {}: {}", worker_idx, computer.status().to_string());
    return;
  }
  ExpertRequestHandler handler(config_, store_, blobs_, **computer, options_.identity,
                               options_.limits, counters_);
  std::vector<std::unique_ptr<Job>> jobs;
  std::vector<ExpertRequestHandler::Inbound> batch;
  std::vector<Reply> replies;
  while (true) {
    jobs.clear();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [&] { return stopping_.load() || !queue_.empty(); });
      if (stopping_.load()) return;
      // Every queued message at once, computed together (handle_many).
      while (!queue_.empty()) {
        jobs.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    batch.clear();
    for (const auto& job : jobs) batch.push_back({&job->envelope, job->payload});
    handler.handle_many(batch, &replies);
    for (size_t i = 0; i < jobs.size(); ++i) {
      Status sent =
          net::send_message(*push, replies[i].envelope, replies[i].payload, jobs[i]->routing_id);
      if (!sent.is_ok()) spdlog::warn("expert service worker {}: {}", worker_idx, sent.to_string());
    }
  }
}

}  // namespace dancemoe::node
