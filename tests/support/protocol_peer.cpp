#include "tests/support/protocol_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/net/zmq_transport.h"

namespace dancemoe::testing {

using Clock = std::chrono::steady_clock;

ProtocolPeer::ProtocolPeer(PeerOptions options) : options_(std::move(options)) {}

ProtocolPeer::~ProtocolPeer() { stop(); }

void ProtocolPeer::start() {
  if (running_) return;
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = false;
  }
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void ProtocolPeer::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  running_ = false;
}

void ProtocolPeer::set_prepare_answer(PrepareAnswer answer) {
  std::lock_guard lock(mutex_);
  answer_ = answer;
}

uint64_t ProtocolPeer::next_sequence() {
  std::lock_guard lock(mutex_);
  return ++sequence_;
}

proto::Envelope ProtocolPeer::envelope(proto::Body body, uint64_t sequence) {
  proto::Envelope env;
  env.cluster_id = options_.cluster_id;
  env.sender = options_.node_id;
  env.sequence = sequence;
  env.body = std::move(body);
  return env;
}

void ProtocolPeer::post(std::function<void()> command) {
  std::lock_guard lock(mutex_);
  commands_.push_back(std::move(command));
}

template <typename Predicate>
bool ProtocolPeer::wait_until(std::chrono::milliseconds timeout, Predicate predicate) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return predicate(); });
}

// --------------------------------------------------------- peer thread only

void ProtocolPeer::send_envelope(const proto::Envelope& env) {
  (void)net::send_message(*socket_, env);  // a failed send is a lost message: resent or timed out
}

void ProtocolPeer::send_register() {
  proto::Register reg;
  reg.node_id = options_.node_id;
  reg.model_id = options_.model_id;
  reg.devices = options_.devices;
  reg.host_memory_bytes = uint64_t{64} << 30;
  reg.expert_endpoint = options_.expert_endpoint;
  reg.http_endpoint = "http://127.0.0.1:0";
  uint64_t sequence = 0;
  {
    std::lock_guard lock(mutex_);
    reg.placement_version = committed_;
    reg.resident = resident_;
    reg.resident_devices = resident_devices_;
    sequence = ++sequence_;
    registered_.reset();
  }
  send_envelope(envelope(reg, sequence));
}

void ProtocolPeer::on_message(const proto::Envelope& env) {
  std::unique_lock lock(mutex_);
  if (const auto* reply = std::get_if<proto::RegisterReply>(&env.body)) {
    registered_ = reply->accepted;
    refusal_ = reply->reason;
    if (reply->accepted) {
      ++registrations_;
      heartbeat_interval_ms_ = std::max<uint32_t>(reply->heartbeat_interval_ms, 10);
    }
  } else if (const auto* ack = std::get_if<proto::Ack>(&env.body)) {
    if (heartbeat_sequences_.erase(ack->sequence) > 0) return;  // not an answer to anyone
    unacked_.erase(ack->sequence);
    answers_[ack->sequence] = env;
  } else if (const auto* error = std::get_if<proto::Error>(&env.body)) {
    // not_found is the scheduler's "register again" (docs/node/README.md).
    const bool unknown = error->code == StatusCode::kNotFound;
    // Invalid input is final; "unknown node" and "not stored" are retried.
    if (!unknown && error->code != StatusCode::kUnavailable) unacked_.erase(error->in_reply_to);
    answers_[error->in_reply_to] = env;
    if (unknown && options_.auto_register && registered_.value_or(false)) {
      lock.unlock();
      send_register();
      lock.lock();
    }
  } else if (const auto* prepare = std::get_if<proto::PlacementPrepare>(&env.body)) {
    last_prepare_ = *prepare;
    prepared_.push_back(prepare->version);
    const PrepareAnswer answer = answer_;
    const uint64_t sequence = ++sequence_;
    lock.unlock();
    switch (answer) {
      case PrepareAnswer::kReady:
        send_envelope(envelope(proto::Ready{prepare->version}, sequence));
        break;
      case PrepareAnswer::kAbort:
        send_envelope(
            envelope(proto::Abort{prepare->version, "test peer refuses to load"}, sequence));
        break;
      case PrepareAnswer::kSilent:
        break;
      case PrepareAnswer::kDie:
        lock.lock();
        stop_requested_ = true;
        lock.unlock();
        break;
    }
    lock.lock();
  } else if (const auto* commit = std::get_if<proto::Commit>(&env.body)) {
    if (last_prepare_ && last_prepare_->version == commit->version) {
      committed_ = commit->version;
      committed_versions_.push_back(commit->version);
      resident_.clear();
      resident_devices_.clear();
      for (const NodePlacement& node : last_prepare_->nodes) {
        if (node.node_id != options_.node_id) continue;
        for (size_t g = 0; g < node.devices.size(); ++g) {
          for (const ExpertRef& r : node.devices[g].experts) {
            resident_.push_back(r);
            resident_devices_.push_back(static_cast<uint16_t>(g));
          }
        }
      }
    }
  } else if (const auto* abort = std::get_if<proto::Abort>(&env.body)) {
    aborted_.push_back(abort->version);
  } else if (const auto* members = std::get_if<proto::Members>(&env.body)) {
    members_ = *members;
  }
  const bool placement = std::holds_alternative<proto::Members>(env.body) ||
                         std::holds_alternative<proto::PlacementPrepare>(env.body) ||
                         std::holds_alternative<proto::Commit>(env.body) ||
                         std::holds_alternative<proto::Abort>(env.body);
  if (!placement) any_answer_ = env;
  lock.unlock();
  changed_.notify_all();
}

void ProtocolPeer::run() {
  zmq::context_t& context = context_;
  net::SocketOptions socket_options;
  socket_options.curve = options_.curve;
  auto socket = net::make_socket(context, zmq::socket_type::dealer, socket_options);
  if (!socket.is_ok()) return;
  socket_.emplace(std::move(*socket));
  if (!net::connect(*socket_, options_.scheduler).is_ok()) return;
  if (options_.auto_register) send_register();
  auto last_heartbeat = Clock::now();
  while (true) {
    std::deque<std::function<void()>> commands;
    bool heartbeat_due = false;
    std::vector<proto::Envelope> resend;
    {
      std::lock_guard lock(mutex_);
      if (stop_requested_) break;
      commands.swap(commands_);
      const auto now = Clock::now();
      heartbeat_due = options_.heartbeats && registered_.value_or(false) &&
                      now - last_heartbeat >= std::chrono::milliseconds(heartbeat_interval_ms_);
      for (auto& [sequence, pending] : unacked_) {
        if (registered_.value_or(false) && now - pending.last_sent >= options_.resend_after) {
          pending.last_sent = now;
          resend.push_back(pending.envelope);
        }
      }
    }
    for (auto& command : commands) command();
    for (const proto::Envelope& env : resend) send_envelope(env);
    if (heartbeat_due) {
      last_heartbeat = Clock::now();
      uint64_t version = 0, sequence = 0, members_version = 0;
      {
        std::lock_guard lock(mutex_);
        version = committed_;
        members_version = members_ ? members_->version : 0;
        sequence = ++sequence_;
        heartbeat_sequences_.insert(sequence);
        // Acks lost with a restarted scheduler never come: forget old ones.
        while (heartbeat_sequences_.size() > 64) {
          heartbeat_sequences_.erase(heartbeat_sequences_.begin());
        }
      }
      send_envelope(envelope(proto::Heartbeat{version, 0, members_version}, sequence));
    }
    std::optional<net::ReceivedMessage> message =
        net::receive_message(*socket_, std::chrono::milliseconds(5), /*router=*/false);
    if (message && message->envelope.is_ok()) on_message(*message->envelope);
  }
  socket_.reset();
}

// ------------------------------------------------------------- test thread

std::optional<bool> ProtocolPeer::wait_registered(std::chrono::milliseconds timeout) {
  std::optional<bool> result;
  wait_until(timeout, [&] {
    result = registered_;
    return registered_.has_value();
  });
  return result;
}

std::string ProtocolPeer::refusal_reason() const {
  std::lock_guard lock(mutex_);
  return refusal_;
}

uint64_t ProtocolPeer::registrations() const {
  std::lock_guard lock(mutex_);
  return registrations_;
}

Result<uint64_t> ProtocolPeer::report(const proto::ActivationReport& report,
                                      std::chrono::milliseconds timeout) {
  const uint64_t sequence = next_sequence();
  proto::Envelope env = envelope(report, sequence);
  post([this, env, sequence] {
    {
      std::lock_guard lock(mutex_);
      unacked_[sequence] = {env, Clock::now()};
    }
    send_envelope(env);
  });
  proto::Envelope answer;
  if (!wait_until(timeout, [&] {
        const auto it = answers_.find(sequence);
        if (it == answers_.end()) return false;
        if (const auto* e = std::get_if<proto::Error>(&it->second.body)) {
          // Retried errors are not final answers.
          if (unacked_.count(sequence)) {
            answers_.erase(it);
            return false;
          }
          (void)e;
        }
        answer = it->second;
        return true;
      })) {
    return deadline_exceeded("report " + std::to_string(sequence) + " was not acknowledged");
  }
  if (const auto* e = std::get_if<proto::Error>(&answer.body)) return Status(e->code, e->message);
  return sequence;
}

Result<proto::Envelope> ProtocolPeer::send_report(const proto::ActivationReport& report,
                                                  uint64_t sequence,
                                                  std::chrono::milliseconds timeout) {
  proto::Envelope env = envelope(report, sequence);
  {
    std::lock_guard lock(mutex_);
    answers_.erase(sequence);
  }
  post([this, env] { send_envelope(env); });
  proto::Envelope answer;
  if (!wait_until(timeout, [&] {
        const auto it = answers_.find(sequence);
        if (it == answers_.end()) return false;
        answer = it->second;
        return true;
      })) {
    return deadline_exceeded("no answer to report " + std::to_string(sequence));
  }
  return answer;
}

Result<proto::Envelope> ProtocolPeer::request(proto::Body body, std::chrono::milliseconds timeout) {
  const proto::Envelope env = envelope(std::move(body), next_sequence());
  return request_raw(proto::encode(env), timeout);
}

Result<proto::Envelope> ProtocolPeer::request_raw(std::vector<uint8_t> frame,
                                                  std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(mutex_);
    any_answer_.reset();
  }
  post([this, frame = std::move(frame)] {
    (void)net::send_frame(*socket_, frame);  // a lost frame shows as no answer
  });
  proto::Envelope answer;
  if (!wait_until(timeout, [&] {
        if (!any_answer_) return false;
        answer = *any_answer_;
        return true;
      })) {
    return deadline_exceeded("no answer from the scheduler");
  }
  return answer;
}

uint64_t ProtocolPeer::committed_version() const {
  std::lock_guard lock(mutex_);
  return committed_;
}

std::vector<uint64_t> ProtocolPeer::committed_versions() const {
  std::lock_guard lock(mutex_);
  return committed_versions_;
}

std::vector<uint64_t> ProtocolPeer::prepared_versions() const {
  std::lock_guard lock(mutex_);
  return prepared_;
}

std::vector<uint64_t> ProtocolPeer::aborted_versions() const {
  std::lock_guard lock(mutex_);
  return aborted_;
}

std::optional<proto::PlacementPrepare> ProtocolPeer::last_prepare() const {
  std::lock_guard lock(mutex_);
  return last_prepare_;
}

std::optional<proto::Members> ProtocolPeer::last_members() const {
  std::lock_guard lock(mutex_);
  return members_;
}

bool ProtocolPeer::wait_committed(uint64_t version, std::chrono::milliseconds timeout) {
  return wait_until(timeout, [&] { return committed_ == version; });
}

bool ProtocolPeer::wait_aborted(uint64_t version, std::chrono::milliseconds timeout) {
  return wait_until(timeout, [&] {
    return std::find(aborted_.begin(), aborted_.end(), version) != aborted_.end();
  });
}

bool ProtocolPeer::wait_prepared(uint64_t version, std::chrono::milliseconds timeout) {
  return wait_until(timeout, [&] {
    return std::find(prepared_.begin(), prepared_.end(), version) != prepared_.end();
  });
}

std::optional<uint64_t> ProtocolPeer::wait_commit_above(uint64_t above,
                                                        std::chrono::milliseconds timeout) {
  uint64_t version = 0;
  if (!wait_until(timeout, [&] {
        version = committed_;
        return committed_ > above;
      })) {
    return std::nullopt;
  }
  return version;
}

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    socklen_t length = sizeof(address);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port = ntohs(address.sin_port);
    }
  }
  ::close(fd);
  return port;
}

}  // namespace dancemoe::testing
