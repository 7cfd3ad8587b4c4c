#include "edge_node/migration/migration_executor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <future>

namespace dancemoe::node {
namespace {

using Millis = std::chrono::milliseconds;

bool contains(const std::vector<ExpertRef>& keys, ExpertRef key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::string key_name(ExpertRef k) {
  return "expert " + std::to_string(k.expert) + " of layer " + std::to_string(k.layer);
}

}  // namespace

MigrationExecutor::MigrationExecutor(const Checkpoint& checkpoint, ExpertStore& store,
                                     HolderTableHandle& table, ActivationLog& log,
                                     zmq::context_t& context, MigrationOptions options,
                                     ServingProbe serving)
    : checkpoint_(checkpoint),
      store_(store),
      table_(table),
      log_(log),
      context_(context),
      options_(std::move(options)),
      serving_(std::move(serving)),
      throttle_(options_.throttle) {
  status_.committed_version = table_.get()->version();
}

MigrationExecutor::~MigrationExecutor() { cancel_loader(); }

void MigrationExecutor::cancel_loader() {
  cancel_.store(true);
  if (thread_.joinable()) thread_.join();
  cancel_.store(false);
}

void MigrationExecutor::begin_loading(uint64_t version, std::shared_ptr<const HolderTable> target,
                                      uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = State::kLoading;
  target_version_ = version;
  target_ = std::move(target);
  status_.state = "loading";
  status_.target_version = version;
  status_.bytes_total = bytes;
  status_.bytes_done = 0;
  status_.last_error.clear();
}

Status MigrationExecutor::prepare(const ClusterPlacement& placement, DoneCallback on_done) {
  const ModelConfig& config = checkpoint_.config();
  DMOE_ASSIGN_OR_RETURN(std::shared_ptr<const HolderTable> target,
                        HolderTable::build(placement, options_.node_id, config, options_.devices));
  const uint64_t committed = committed_version();
  if (placement.version < committed) {
    return failed_precondition("placement v" + std::to_string(placement.version) +
                               " is older than the committed v" + std::to_string(committed));
  }
  uint64_t load_bytes = 0;
  std::vector<Load> to_load = missing(*target, &load_bytes);
  if (options_.memory_limit_bytes > 0 &&
      store_.resident_bytes() + load_bytes > options_.memory_limit_bytes) {
    return resource_exhausted(
        "placement v" + std::to_string(placement.version) + " needs " + std::to_string(load_bytes) +
        " more expert bytes beside the " + std::to_string(store_.resident_bytes()) +
        " resident, over the limit of " + std::to_string(options_.memory_limit_bytes) +
        " (--expert-memory + --migration-headroom)");
  }
  cancel_loader();  // a newer prepare supersedes one in progress
  begin_loading(placement.version, target, load_bytes);
  loading_.store(true);
  thread_ = std::thread([this, v = placement.version, keys = std::move(to_load), target,
                         done = std::move(on_done)]() mutable {
    loader(v, std::move(keys), std::move(target), /*throttled=*/true, std::move(done));
  });
  return Status::ok();
}

std::vector<MigrationExecutor::Load> MigrationExecutor::missing(const HolderTable& target,
                                                                uint64_t* bytes) const {
  std::vector<Load> loads;
  const std::vector<ExpertRef> keys = target.local_experts();
  const std::vector<int32_t> devices = target.local_devices();
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::shared_ptr<const ExpertWeights> held = store_.get(keys[i]);
    if (held != nullptr && held->device == devices[i]) continue;
    loads.push_back({keys[i], devices[i]});
    *bytes += store_.expert_bytes(keys[i]);
  }
  return loads;
}

Status MigrationExecutor::load_one(const Load& load, const HolderTable& target,
                                   ExpertFetcher& fetcher) {
  const ExpertRef key = load.key;
  Status local = unavailable("local files not used (--expert-source peer)");
  if (options_.source != ExpertSource::kPeer) {
    local = store_.load(key, load.device);
    if (local.is_ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++status_.experts_loaded;
      return local;
    }
    if (options_.source == ExpertSource::kLocal) return local;
    if (local.code() == StatusCode::kNotFound && checkpoint_.is_split()) {
      spdlog::debug("migration: {} is not on this node's disk; fetching it from a peer",
                    key_name(key));
    } else {
      spdlog::warn("migration: cannot read {} from local files ({}); fetching it from a peer",
                   key_name(key), local.message());
    }
  }
  // A converted expert (--expert-type) of a model with a manifest cannot be
  // verified from a peer's bytes: no fetch (install() refuses the same).
  if (Status installable = store_.check_installable(key); !installable.is_ok()) {
    return installable.with_context("local files: " + local.message());
  }
  // Peers that hold it now (committed table) first, then those that will;
  // on a partial checkpoint then every other peer: a node may have the
  // expert's file on disk without holding it (it serves it from there).
  std::vector<PeerInfo> sources;
  const std::shared_ptr<const HolderTable> committed = table_.get();
  auto add = [&](const PeerInfo& p) {
    const bool seen = std::any_of(sources.begin(), sources.end(),
                                  [&](const PeerInfo& s) { return s.node_id == p.node_id; });
    if (!seen) sources.push_back(p);
  };
  for (const HolderTable* t : {committed.get(), &target}) {
    for (int32_t h : t->remote_holders(key.layer, key.expert)) {
      add(t->peers()[static_cast<size_t>(h)]);
    }
  }
  if (checkpoint_.is_split()) {
    for (const PeerInfo& p : target.peers()) add(p);
  }
  // With digests (a manifest, or a split checkpoint's index), a source whose
  // bytes do not match is skipped for the next one (install() checks the
  // same again); the bytes fetched are as held, which check_installable()
  // made the stored ones.
  const ExpertManifest* digests = checkpoint_.expert_digests();
  FetchStats stats;
  Result<std::vector<uint8_t>> bytes = fetcher.fetch(
      key, store_.expert_bytes(key), sources, digests ? digests->find(key) : nullptr, &stats);
  if (!bytes.is_ok()) {
    return bytes.status().with_context(options_.source == ExpertSource::kAuto
                                           ? "local files: " + local.message()
                                           : std::string("fetch"));
  }
  if (stats.bytes_resumed > 0) {
    spdlog::info("migration: {} resumed from {} after {} bytes from an earlier peer", key_name(key),
                 stats.source, stats.bytes_resumed);
  }
  DMOE_RETURN_IF_ERROR(store_.install(key, *bytes, load.device));
  persist(key, *bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ++status_.experts_fetched;
  return Status::ok();
}

// The local expert store (a split checkpoint's experts/): what was fetched
// is kept, so a restart loads it from disk. A full disk is no failure of
// the migration -- the expert is resident -- only a note and a counter.
void MigrationExecutor::persist(ExpertRef key, const std::vector<uint8_t>& bytes) {
  const ExpertFiles* files = checkpoint_.expert_files();
  if (files == nullptr || !store_.holds_as_stored(key)) return;
  const Status written = files->write(key, bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (written.is_ok()) {
    ++status_.experts_stored;
    return;
  }
  ++status_.store_failures;
  if (status_.last_store_error.empty()) {
    spdlog::warn("expert store: {} (serving goes on; later ones are counted, not logged)",
                 written.message());
  }
  status_.last_store_error = written.message();
}

void MigrationExecutor::loader(uint64_t version, std::vector<Load> loads,
                               std::shared_ptr<const HolderTable> target, bool throttled,
                               DoneCallback on_done) {
  ExpertFetcher fetcher(context_,
                        FetcherOptions{options_.node_id, options_.cluster_id, options_.chunk_bytes,
                                       options_.fetch_timeout, options_.members});
  Status result = Status::ok();
  for (const Load& load : loads) {
    const ExpertRef key = load.key;
    if (cancel_.load()) {
      result = failed_precondition("preparation of v" + std::to_string(version) + " cancelled");
      break;
    }
    const Millis start = steady_now();
    Status s = load_one(load, *target, fetcher);
    if (!s.is_ok()) {
      result = s.with_context("placement v" + std::to_string(version) + ": " + key_name(key));
      break;
    }
    const uint64_t bytes = store_.expert_bytes(key);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      status_.bytes_done += bytes;
    }
    if (!throttled) continue;
    const Millis pause = std::chrono::ceil<Millis>(
        throttle_.pause_after(bytes, steady_now() - start, serving_ ? serving_() : false));
    // Sleep in slices so a cancel (abort, newer prepare, shutdown) is prompt;
    // the deadline is on the injected clock, the slices are real.
    const Millis until = steady_now() + pause;
    while (!cancel_.load() && steady_now() < until) {
      std::this_thread::sleep_for(std::min<Millis>(until - steady_now(), Millis(20)));
    }
  }
  bool report = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (target_version_ != version) {
      report = false;  // superseded meanwhile
    } else if (result.is_ok()) {
      state_ = State::kReady;
      status_.state = "ready";
    } else {
      state_ = State::kFailed;
      status_.state = "failed";
      status_.last_error = result.to_string();
    }
  }
  loading_.store(false);
  if (report && on_done) on_done(version, result);
}

Status MigrationExecutor::commit(uint64_t version) {
  std::shared_ptr<const HolderTable> target;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (version == status_.committed_version && state_ != State::kReady) return Status::ok();
    if (target_version_ != version || state_ == State::kIdle) {
      return failed_precondition("commit of v" + std::to_string(version) +
                                 ", but no such version was prepared (committed v" +
                                 std::to_string(status_.committed_version) + ")");
    }
    if (state_ == State::kLoading) {
      return failed_precondition("commit of v" + std::to_string(version) +
                                 " while its experts are still loading");
    }
    if (state_ == State::kFailed) {
      return failed_precondition("commit of v" + std::to_string(version) +
                                 ", whose preparation failed: " + status_.last_error);
    }
    target = target_;
  }
  // Finished (state is kReady); on_done may call commit from the loader itself.
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  table_.set(target);  // the atomic switch: the next layer routes by v
  log_.set_placement_version(version, unix_now_ms());
  evict_except(target->local_experts());
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = State::kIdle;
  status_.state = "idle";
  status_.committed_version = version;
  target_.reset();
  spdlog::info("placement v{} committed: {} experts held here", version,
               target->local_experts().size());
  return Status::ok();
}

Status MigrationExecutor::abort(uint64_t version, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (target_version_ != version || state_ == State::kIdle) return Status::ok();
  }
  cancel_loader();
  evict_except(table_.get()->local_experts());
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = State::kIdle;
  status_.state = "idle";
  status_.last_error = "v" + std::to_string(version) + " aborted: " + reason;
  target_.reset();
  target_version_ = 0;
  return Status::ok();
}

Status MigrationExecutor::apply_now(const ClusterPlacement& placement) {
  DMOE_ASSIGN_OR_RETURN(
      std::shared_ptr<const HolderTable> target,
      HolderTable::build(placement, options_.node_id, checkpoint_.config(), options_.devices));
  uint64_t bytes = 0;
  std::vector<Load> to_load = missing(*target, &bytes);
  cancel_loader();
  begin_loading(placement.version, target, bytes);
  Status result = Status::ok();
  loading_.store(true);
  loader(placement.version, std::move(to_load), target, /*throttled=*/false,
         [&](uint64_t, const Status& s) { result = s; });
  if (!result.is_ok()) return result;
  return commit(placement.version);
}

void MigrationExecutor::evict_except(const std::vector<ExpertRef>& keep) {
  uint64_t n = 0;
  for (ExpertRef k : store_.resident_keys()) {
    if (!contains(keep, k) && store_.evict(k)) ++n;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  status_.experts_evicted += n;
}

MigrationStatus MigrationExecutor::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

uint64_t MigrationExecutor::committed_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_.committed_version;
}

}  // namespace dancemoe::node
