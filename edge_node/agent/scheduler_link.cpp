#include "edge_node/agent/scheduler_link.h"

#include <spdlog/spdlog.h>

#include <random>

#include "common/net/poller.h"
#include "common/net/zmq_transport.h"
#include "common/placement/placement_json.h"

namespace dancemoe::node {
namespace {

constexpr std::chrono::milliseconds kPoll{50};
constexpr std::chrono::milliseconds kRepeatWarning{60000};

// Errors in reply to a Register that a later attempt may not get: anything
// but a scheduler too busy to answer. A wrong cluster id, protocol version
// or malformed registration will be refused the same way every time.
bool final_registration_error(StatusCode code) {
  return code != StatusCode::kUnavailable && code != StatusCode::kResourceExhausted &&
         code != StatusCode::kDeadlineExceeded;
}

}  // namespace

SchedulerLink::SchedulerLink(zmq::context_t& context, SchedulerLinkOptions options,
                             RegisterBuilder build, MigrationExecutor& migration,
                             ActivationLog& log, InFlight in_flight)
    : context_(context),
      options_(std::move(options)),
      build_register_(std::move(build)),
      migration_(migration),
      log_(log),
      in_flight_(std::move(in_flight)),
      heartbeat_interval_(options_.heartbeat_interval),
      report_interval_(options_.report_interval),
      reports_(options_.report_buffer) {}

SchedulerLink::~SchedulerLink() { stop(); }

void SchedulerLink::start() {
  stopping_.store(false);
  thread_ = std::thread([this] { run(); });
}

void SchedulerLink::stop() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
}

LinkStatus SchedulerLink::status() const {
  std::lock_guard<std::mutex> lock(status_mutex_);
  return status_;
}

bool SchedulerLink::open_socket() {
  socket_.reset();  // linger 0: whatever was queued for the old connection is dropped
  net::SocketOptions options;
  options.routing_id = options_.node_id;
  if (options_.members && options_.members->secure()) {
    options.curve = net::CurveOptions{*options_.members->own(), options_.scheduler_key};
    // Unique per connection: the scheduler's ROUTER drops a second
    // connection whose routing id is in use, so a second node given an id
    // already in use would wait unanswered forever. With its own routing id
    // its Register arrives and is refused by name (the id is bound to the
    // first node's key). Without keys there is no identity to refuse by:
    // the duplicate stays unanswered (and says so in its log).
    options.routing_id += "#" + std::to_string(std::random_device{}());
  }
  options.send_timeout = std::chrono::milliseconds(0);  // never block this thread on a send
  Result<zmq::socket_t> socket = net::make_socket(context_, zmq::socket_type::dealer, options);
  if (!socket.is_ok()) {
    spdlog::error("scheduler link: {}", socket.status().to_string());
    return false;
  }
  Status connected = net::connect(*socket, options_.endpoint);
  if (!connected.is_ok()) {
    spdlog::error("scheduler link: {}", connected.to_string());
    return false;
  }
  socket_.emplace(std::move(*socket));
  return true;
}

void SchedulerLink::send(proto::Body body, uint64_t sequence) {
  if (!socket_) return;
  proto::Envelope e;
  e.cluster_id = options_.cluster_id;
  e.sender = options_.node_id;
  e.sequence = sequence != 0 ? sequence : ++sequence_;
  e.body = std::move(body);
  Status s = net::send_message(*socket_, e);
  // Not connected yet or the queue is full: an expected outcome. Reports are
  // resent from the buffer; heartbeats are periodic anyway.
  if (!s.is_ok())
    spdlog::debug("scheduler link: {} not sent: {}", proto::body_name(e.body), s.message());
}

void SchedulerLink::lose(const std::string& why) {
  if (state_ == State::kAttached) {
    spdlog::warn("scheduler {} lost ({}); serving on committed placement v{}, reconnecting",
                 options_.endpoint, why, migration_.committed_version());
  }
  state_ = State::kDisconnected;
  socket_.reset();
  next_register_ = steady_now() + backoff_;
  std::lock_guard<std::mutex> lock(status_mutex_);
  status_.attached = false;
  status_.reason = why;
}

void SchedulerLink::refuse(const std::string& reason) {
  spdlog::error("the scheduler at {} refused this node: {}", options_.endpoint, reason);
  refused_.store(true);
  state_ = State::kDisconnected;
  next_register_ = Millis::max();
  socket_.reset();
  std::lock_guard<std::mutex> lock(status_mutex_);
  status_.refused = true;
  status_.attached = false;
  status_.reason = reason;
}

void SchedulerLink::collect_reports(Millis now) {
  if (now - last_report_ < report_interval_) return;
  last_report_ = now;
  for (proto::ActivationReport& r :
       log_.take_windows(static_cast<uint64_t>(options_.clock->wall_ms()))) {
    reports_.push(++sequence_, std::move(r));
  }
}

void SchedulerLink::run() {
  const Millis start = steady_now();
  last_report_ = start;
  next_register_ = start;
  backoff_ = std::chrono::milliseconds(250);
  while (!stopping_.load()) {
    const Millis now = steady_now();
    if (state_ == State::kDisconnected && now >= next_register_) {
      if (open_socket()) {
        send(build_register_());
        register_sequence_ = sequence_;
        state_ = State::kRegistering;
        register_sent_ = now;
        if (unanswered_since_ == Millis{0}) unanswered_since_ = now;
      } else {
        next_register_ = now + options_.max_backoff;
      }
    }
    if (state_ == State::kRegistering && now - register_sent_ > options_.register_timeout) {
      const std::string why =
          "no answer from the scheduler at " + options_.endpoint + " within " +
          std::to_string(options_.register_timeout.count()) +
          " ms (is dancemoe-scheduler running there, and is --scheduler its control endpoint?" +
          (options_.members && options_.members->secure()
               ? " A scheduler that has not admitted this node's key, or whose key is not "
                 "--scheduler-key, never answers."
               : "") +
          ")";
      lose(why);
      backoff_ = std::min<Millis>(backoff_ * 2, options_.max_backoff);
      // Said once, then again every minute while it lasts: the log shows
      // that the node is waiting, and why, without a line per attempt.
      if (last_unanswered_log_ == Millis{0} || now - last_unanswered_log_ >= kRepeatWarning) {
        last_unanswered_log_ = now;
        spdlog::warn(
            "not attached: {}; retrying every {} s (for {} s so far)", why,
            std::chrono::duration_cast<std::chrono::seconds>(options_.max_backoff).count(),
            std::chrono::duration_cast<std::chrono::seconds>(now - unanswered_since_).count());
      }
    }
    if (socket_) {
      while (std::optional<net::ReceivedMessage> m =
                 net::receive_message(*socket_, std::chrono::milliseconds(0), false)) {
        if (!m->envelope.is_ok()) {
          spdlog::warn("scheduler link: bad message from the scheduler: {}",
                       m->envelope.status().to_string());
          continue;
        }
        last_heard_ = steady_now();
        handle(*m->envelope);
        if (!socket_) break;
      }
    }
    collect_reports(now);
    if (state_ == State::kAttached) {
      if (now - last_heartbeat_ >= heartbeat_interval_) {
        last_heartbeat_ = now;
        send(proto::Heartbeat{migration_.committed_version(), in_flight_ ? in_flight_() : 0,
                              options_.members ? options_.members->version() : 0});
      }
      const auto resend_after = std::max<Millis>(2 * heartbeat_interval_, std::chrono::seconds(2));
      for (auto& [seq, report] : reports_.due(now, resend_after)) {
        send(std::move(report), seq);
        std::lock_guard<std::mutex> lock(status_mutex_);
        ++status_.reports_sent;
      }
      std::deque<proto::Body> outbox;
      {
        std::lock_guard<std::mutex> lock(outbox_mutex_);
        outbox.swap(outbox_);
      }
      for (proto::Body& b : outbox) send(std::move(b));
      if (now - last_heard_ > heartbeat_interval_ * options_.missed_heartbeats) {
        lose("nothing heard for " + std::to_string(options_.missed_heartbeats) + " heartbeats");
      }
    }
    {
      std::lock_guard<std::mutex> lock(status_mutex_);
      status_.reports_pending = reports_.size();
      status_.reports_dropped = reports_.dropped();
    }
    if (socket_) {
      net::Poller poller;
      poller.add(*socket_);
      (void)poller.wait(kPoll);  // readable, timed out or interrupted: the loop looks again
    } else {
      std::this_thread::sleep_for(kPoll);
    }
  }
}

void SchedulerLink::handle(const proto::Envelope& e) {
  if (const auto* reply = std::get_if<proto::RegisterReply>(&e.body)) {
    if (!reply->accepted) {
      refuse(reply->reason);
      return;
    }
    unanswered_since_ = Millis{0};
    last_unanswered_log_ = Millis{0};
    if (reply->heartbeat_interval_ms > 0) {
      heartbeat_interval_ = std::chrono::milliseconds(reply->heartbeat_interval_ms);
    }
    if (!options_.report_interval_from_flag && reply->report_interval_ms > 0) {
      report_interval_ = std::chrono::milliseconds(reply->report_interval_ms);
    }
    state_ = State::kAttached;
    backoff_ = std::chrono::milliseconds(250);
    last_heartbeat_ = {};
    reports_.mark_all_unsent();
    spdlog::info("attached to the scheduler at {} (committed placement there: v{})",
                 options_.endpoint, reply->placement_version);
    std::lock_guard<std::mutex> lock(status_mutex_);
    status_.attached = true;
    status_.reason.clear();
    ++status_.registrations;
    return;
  }
  if (const auto* members = std::get_if<proto::Members>(&e.body)) {
    if (options_.members && options_.members->secure()) {
      options_.members->replace(*members);
      spdlog::info("members v{:x}: {} admitted node key(s)", members->version,
                   members->members.size());
    }
    return;
  }
  if (const auto* ack = std::get_if<proto::Ack>(&e.body)) {
    if (reports_.ack(ack->sequence)) {
      std::lock_guard<std::mutex> lock(status_mutex_);
      ++status_.reports_acked;
    }
    return;
  }
  if (const auto* prepare = std::get_if<proto::PlacementPrepare>(&e.body)) {
    const uint64_t v = prepare->version;
    spdlog::info("placement v{} prepared by the scheduler: loading", v);
    Status s = migration_.prepare(*prepare, [this](uint64_t version, const Status& status) {
      std::lock_guard<std::mutex> lock(outbox_mutex_);
      if (status.is_ok()) {
        outbox_.push_back(proto::Ready{version});
      } else {
        spdlog::warn("placement v{} failed: {}", version, status.to_string());
        outbox_.push_back(proto::Abort{version, status.to_string()});
      }
    });
    if (!s.is_ok()) {
      spdlog::warn("placement v{} refused: {}", v, s.to_string());
      send(proto::Abort{v, s.to_string()});
    }
    return;
  }
  if (const auto* commit = std::get_if<proto::Commit>(&e.body)) {
    Status s = migration_.commit(commit->version);
    if (s.is_ok()) {
      send(proto::Ack{e.sequence});
    } else {
      send(proto::Error{s.code(), s.message(), e.sequence});
    }
    return;
  }
  if (const auto* abort = std::get_if<proto::Abort>(&e.body)) {
    (void)migration_.abort(abort->version, abort->reason);
    send(proto::Ack{e.sequence});
    return;
  }
  if (const auto* error = std::get_if<proto::Error>(&e.body)) {
    if (state_ == State::kRegistering && error->in_reply_to == register_sequence_ &&
        final_registration_error(error->code)) {
      refuse(std::string(status_code_name(error->code)) + ": " + error->message);
      return;
    }
    spdlog::warn("scheduler error: {}: {}", status_code_name(error->code), error->message);
    if (error->code == StatusCode::kNotFound && state_ == State::kAttached) {
      // A restarted scheduler (or one that marked us down) no longer knows
      // this node: register again.
      lose("scheduler answered with an error: " + error->message);
      next_register_ = steady_now();
      return;
    }
    // A report the scheduler refused would be refused again: drop it, counted.
    if (error->in_reply_to != 0 && reports_.ack(error->in_reply_to)) {
      std::lock_guard<std::mutex> lock(status_mutex_);
      ++status_.reports_refused;
      status_.reason = "report refused: " + error->message;
    }
    return;
  }
  spdlog::debug("scheduler link: ignoring {}", proto::body_name(e.body));
}

}  // namespace dancemoe::node
