#include "scheduler/placement/coverage_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dancemoe::placement {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Working state of one solve; see the header for the method.
//
// Layouts: per-item arrays are item-major ([y * n_nodes + n]) because the hot
// loops visit one item on every node (a new candidate for all columns, a
// candidate check of two nodes); the per-node sets stay row-major.
class Solver {
 public:
  Solver(const CoverageInstance& in, int32_t n_nodes, int32_t n_items);
  Status run(CoverageSolution* out);

 private:
  struct HeapEntry {
    double key;  // w[b][y] - w[a][y]
    ExpertIndex item;
  };
  // Min-heap order on the key, ties by lower id (deterministic).
  struct HeapLess {
    bool operator()(const HeapEntry& p, const HeapEntry& q) const {
      return p.key != q.key ? p.key > q.key : p.item > q.item;
    }
  };

  double wt(ExpertIndex y, int32_t n) const { return wt_[static_cast<size_t>(y) * n_nodes_ + n]; }
  bool holds(int32_t n, ExpertIndex y) const {
    return holds_[static_cast<size_t>(y) * n_nodes_ + n] != 0;
  }
  // y is a candidate of edge (a, b): b holds it and a does not.
  bool candidate(int32_t a, int32_t b, ExpertIndex y) const {
    const uint8_t* h = &holds_[static_cast<size_t>(y) * n_nodes_];
    return h[b] && !h[a];
  }
  size_t pair(int32_t a, int32_t b) const { return static_cast<size_t>(a) * n_nodes_ + b; }
  // Order of a node's sets: ascending weight (cheapest to give up first).
  bool kept_less(int32_t n, ExpertIndex a, ExpertIndex b) const {
    const double wa = w_[n][a], wb = w_[n][b];
    return wa != wb ? wa < wb : a > b;
  }
  void insert_sorted(std::vector<ExpertIndex>& list, int32_t n, ExpertIndex y);
  void erase_sorted(std::vector<ExpertIndex>& list, int32_t n, ExpertIndex y);
  void set_surplus(ExpertIndex y, bool surplus);

  void greedy_start();
  void add(int32_t n, ExpertIndex y);
  void drop(int32_t n, ExpertIndex y);
  void offer(int32_t a, int32_t b, ExpertIndex y);
  void push_candidate(int32_t a, int32_t b, ExpertIndex y);
  void rebuild_heap(int32_t a, int32_t b);
  void initial_edge(int32_t a, int32_t b);
  void refresh_edge(int32_t a, int32_t b);
  void compute_start(int32_t n);
  Status initial_potentials();
  Status cover(ExpertIndex x, CoverageSolution* out);

  const CoverageInstance& in_;
  const std::vector<std::vector<double>>& w_;  // [node][item]
  int32_t n_nodes_;
  int32_t n_items_;
  std::vector<int64_t> slots_;
  std::vector<double> wt_;                         // [item][node]
  std::vector<uint8_t> holds_;                     // [item][node]
  std::vector<int32_t> count_;                     // copies per item
  std::vector<std::vector<ExpertIndex>> sets_;     // per node, ascending by kept_less
  std::vector<std::vector<ExpertIndex>> surplus_;  // per node: held items with >= 2 copies
  // Edge bookkeeping. edge(a, b) is kept as the minimum over its current
  // candidates, realised by edge_item. Candidates live in a min-heap per pair
  // (key w[b][y] - w[a][y]); entries that stopped being candidates (y left
  // S_b or joined S_a) are dropped lazily when they reach the top. When b
  // adds y, y becomes a candidate of the whole column (., b): rather than
  // pushing it into n_nodes heaps, it is appended to b's column log and only
  // offered to the edge values (O(1) each); a pair's heap absorbs the log
  // entries it has not seen (column_seen_) only when its edge item stops
  // being a candidate. The edge value stays exact: it is a minimum over
  // candidates and is attained by a live one. A pair's heap is built the
  // first time its edge must be recomputed: the first edge values come from
  // a scan, and many pairs never need a heap.
  std::vector<std::vector<HeapEntry>> heap_;          // [pair(a, b)]
  std::vector<uint8_t> heap_built_;                   // [pair(a, b)]
  std::vector<std::vector<ExpertIndex>> column_log_;  // [b]: items b added
  std::vector<uint32_t> column_seen_;                 // [pair(a, b)]: log prefix in heap(a, b)
  // ub_[n] >= w[n][y] for every item y that n does not hold (exact after the
  // greedy start, raised when n drops an item): bounds the first scans.
  std::vector<double> ub_;
  bool heaps_ready_ = false;
  std::vector<double> edge_;             // [pair(a, b)], +inf when no candidate
  std::vector<ExpertIndex> edge_item_;   // the item realising edge(a, b)
  std::vector<double> start_;            // root -> n
  std::vector<ExpertIndex> start_item_;  // surplus item dropped, -1 = free slot
  std::vector<double> pi_;               // Johnson potentials of the nodes (root: 0)
  double big_ = 0.0;                     // cost of the virtual root -> n arcs
  double tol_ = 0.0;                     // floating-point slack
  int64_t n_violations_ = 0;             // reduced costs found below -tol (must stay 0)
};

Solver::Solver(const CoverageInstance& in, int32_t n_nodes, int32_t n_items)
    : in_(in),
      w_(*in.weight),
      n_nodes_(n_nodes),
      n_items_(n_items),
      slots_(in.slots),
      wt_(static_cast<size_t>(n_nodes) * n_items),
      holds_(static_cast<size_t>(n_nodes) * n_items, 0),
      count_(n_items, 0),
      sets_(n_nodes),
      surplus_(n_nodes),
      heap_(static_cast<size_t>(n_nodes) * n_nodes),
      heap_built_(static_cast<size_t>(n_nodes) * n_nodes, 0),
      column_log_(n_nodes),
      column_seen_(static_cast<size_t>(n_nodes) * n_nodes, 0),
      ub_(n_nodes, -kInf),
      edge_(static_cast<size_t>(n_nodes) * n_nodes, kInf),
      edge_item_(static_cast<size_t>(n_nodes) * n_nodes, -1),
      start_(n_nodes, kInf),
      start_item_(n_nodes, -1),
      pi_(n_nodes, 0.0) {
  for (int64_t& s : slots_) s = std::min<int64_t>(s, n_items_);
  double sum_abs = 0.0;
  for (int32_t n = 0; n < n_nodes_; ++n) {
    for (ExpertIndex y = 0; y < n_items_; ++y) {
      wt_[static_cast<size_t>(y) * n_nodes_ + n] = w_[n][y];
      sum_abs += std::fabs(w_[n][y]);
    }
  }
  // Real path costs lie within +-2 * sum|w|; a virtual arc costs more than all of them.
  big_ = 8.0 * (sum_abs + 1.0);
  tol_ = 1e-12 * big_;
}

void Solver::insert_sorted(std::vector<ExpertIndex>& list, int32_t n, ExpertIndex y) {
  list.insert(std::lower_bound(list.begin(), list.end(), y,
                               [&](ExpertIndex p, ExpertIndex q) { return kept_less(n, p, q); }),
              y);
}

void Solver::erase_sorted(std::vector<ExpertIndex>& list, int32_t n, ExpertIndex y) {
  auto it = std::lower_bound(list.begin(), list.end(), y,
                             [&](ExpertIndex p, ExpertIndex q) { return kept_less(n, p, q); });
  if (it != list.end() && *it == y) list.erase(it);
}

// Adds y to (or removes it from) the surplus list of every node holding it.
void Solver::set_surplus(ExpertIndex y, bool surplus) {
  for (int32_t n = 0; n < n_nodes_; ++n) {
    if (!holds(n, y)) continue;
    if (surplus) {
      insert_sorted(surplus_[n], n, y);
    } else {
      erase_sorted(surplus_[n], n, y);
    }
  }
}

void Solver::add(int32_t n, ExpertIndex y) {
  insert_sorted(sets_[n], n, y);
  holds_[static_cast<size_t>(y) * n_nodes_ + n] = 1;
  ++count_[y];
  if (count_[y] == 2) {
    set_surplus(y, true);
  } else if (count_[y] > 2) {
    insert_sorted(surplus_[n], n, y);
  }
  if (heaps_ready_) {
    column_log_[n].push_back(y);
    for (int32_t a = 0; a < n_nodes_; ++a) {
      if (a != n) offer(a, n, y);
    }
  }
}

void Solver::drop(int32_t n, ExpertIndex y) {
  erase_sorted(sets_[n], n, y);
  if (count_[y] >= 2) erase_sorted(surplus_[n], n, y);
  holds_[static_cast<size_t>(y) * n_nodes_ + n] = 0;
  --count_[y];
  ub_[n] = std::max(ub_[n], w_[n][y]);
  if (count_[y] == 1) set_surplus(y, false);
  if (heaps_ready_) {
    // y is a new candidate of row (n, .) for every b that holds it.
    for (int32_t b = 0; b < n_nodes_; ++b) {
      if (b != n && holds(b, y)) {
        push_candidate(n, b, y);
        offer(n, b, y);
      }
    }
  }
}

void Solver::greedy_start() {
  std::vector<ExpertIndex> cand;
  for (int32_t n = 0; n < n_nodes_; ++n) {
    const std::vector<double>& w = w_[n];
    cand.clear();
    for (ExpertIndex x = 0; x < n_items_; ++x) {
      if (w[x] >= 0) cand.push_back(x);
    }
    auto better = [&](ExpertIndex a, ExpertIndex b) {
      if (w[a] != w[b]) return w[a] > w[b];
      if (in_.prefer != nullptr && (*in_.prefer)[n][a] != (*in_.prefer)[n][b]) {
        return (*in_.prefer)[n][a] > (*in_.prefer)[n][b];
      }
      if (in_.tie_key != nullptr && (*in_.tie_key)[a] != (*in_.tie_key)[b]) {
        return (*in_.tie_key)[a] > (*in_.tie_key)[b];
      }
      return a < b;
    };
    const size_t k = static_cast<size_t>(std::min<int64_t>(slots_[n], cand.size()));
    if (k < cand.size()) std::nth_element(cand.begin(), cand.begin() + k, cand.end(), better);
    cand.resize(k);
    for (ExpertIndex x : cand) {
      holds_[static_cast<size_t>(x) * n_nodes_ + n] = 1;
      ++count_[x];
    }
    sets_[n] = cand;
    std::sort(sets_[n].begin(), sets_[n].end(),
              [&](ExpertIndex a, ExpertIndex b) { return kept_less(n, a, b); });
    for (ExpertIndex x = 0; x < n_items_; ++x) {
      if (!holds(n, x)) ub_[n] = std::max(ub_[n], w[x]);
    }
  }
  for (int32_t n = 0; n < n_nodes_; ++n) {
    for (ExpertIndex y : sets_[n]) {
      if (count_[y] >= 2) surplus_[n].push_back(y);  // inherits the sorted order
    }
  }
}

// Lowers edge(a, b) to y's key if y is a live candidate that beats it.
void Solver::offer(int32_t a, int32_t b, ExpertIndex y) {
  if (!candidate(a, b, y)) return;
  const size_t i = pair(a, b);
  const HeapEntry entry{wt(y, b) - wt(y, a), y};
  if (edge_item_[i] < 0 || HeapLess{}(HeapEntry{edge_[i], edge_item_[i]}, entry)) {
    edge_[i] = entry.key;
    edge_item_[i] = y;
  }
}

void Solver::push_candidate(int32_t a, int32_t b, ExpertIndex y) {
  // An unbuilt heap will be built from S_b, which already includes y.
  if (!heap_built_[pair(a, b)] || !candidate(a, b, y)) return;
  std::vector<HeapEntry>& heap = heap_[pair(a, b)];
  heap.push_back({wt(y, b) - wt(y, a), y});
  std::push_heap(heap.begin(), heap.end(), HeapLess{});
  // Stale entries accumulate; rebuild once they may outnumber the live ones.
  if (heap.size() > 2 * sets_[b].size() + 64) rebuild_heap(a, b);
}

// Rebuilds heap(a, b) from S_b, which includes everything b's log holds.
void Solver::rebuild_heap(int32_t a, int32_t b) {
  std::vector<HeapEntry>& heap = heap_[pair(a, b)];
  heap.clear();
  for (ExpertIndex y : sets_[b]) {
    if (!holds(a, y)) heap.push_back({wt(y, b) - wt(y, a), y});
  }
  std::make_heap(heap.begin(), heap.end(), HeapLess{});
  column_seen_[pair(a, b)] = static_cast<uint32_t>(column_log_[b].size());
  heap_built_[pair(a, b)] = 1;
}

// First value of edge(a, b) by a scan of S_b in ascending w[b][y]: every
// candidate has w[a][y] <= ub[a], so once w[b][y] - ub[a] reaches the best
// key found nothing later can beat it (ub is exact at the start, so the scan
// stops early).
void Solver::initial_edge(int32_t a, int32_t b) {
  HeapEntry best{kInf, -1};
  for (ExpertIndex y : sets_[b]) {
    if (wt(y, b) - ub_[a] >= best.key) break;
    if (holds(a, y)) continue;
    const HeapEntry entry{wt(y, b) - wt(y, a), y};
    if (best.item < 0 || HeapLess{}(best, entry)) best = entry;
  }
  edge_[pair(a, b)] = best.key;
  edge_item_[pair(a, b)] = best.item;
}

// Recomputes edge(a, b) from scratch: absorb the unseen column log, drop
// dead tops.
void Solver::refresh_edge(int32_t a, int32_t b) {
  const size_t i = pair(a, b);
  if (!heap_built_[i]) rebuild_heap(a, b);
  const std::vector<ExpertIndex>& log = column_log_[b];
  for (uint32_t k = column_seen_[i]; k < log.size(); ++k) {
    push_candidate(a, b, log[k]);
    if (column_seen_[i] > k) break;  // a rebuild absorbed the rest
  }
  column_seen_[i] = std::max<uint32_t>(column_seen_[i], static_cast<uint32_t>(log.size()));
  std::vector<HeapEntry>& heap = heap_[i];
  while (!heap.empty() && !candidate(a, b, heap.front().item)) {
    std::pop_heap(heap.begin(), heap.end(), HeapLess{});
    heap.pop_back();
  }
  edge_[i] = heap.empty() ? kInf : heap.front().key;
  edge_item_[i] = heap.empty() ? -1 : heap.front().item;
}

void Solver::compute_start(int32_t n) {
  const bool free_slot = static_cast<int64_t>(sets_[n].size()) < slots_[n];
  start_[n] = free_slot ? 0.0 : kInf;
  start_item_[n] = -1;
  if (!surplus_[n].empty() && w_[n][surplus_[n].front()] < start_[n]) {
    start_[n] = w_[n][surplus_[n].front()];
    start_item_[n] = surplus_[n].front();
  }
}

Status Solver::initial_potentials() {
  // Bellman-Ford from the root over the node graph (edges may be negative;
  // the greedy start is optimal, so there is no negative cycle).
  std::vector<double> d(n_nodes_);
  for (int32_t n = 0; n < n_nodes_; ++n) d[n] = std::min(start_[n], big_);
  for (int32_t round = 0; round <= n_nodes_; ++round) {
    bool changed = false;
    for (int32_t a = 0; a < n_nodes_; ++a) {
      for (int32_t b = 0; b < n_nodes_; ++b) {
        const double e = edge_[pair(a, b)];
        if (a == b || e == kInf) continue;
        if (d[a] + e < d[b] - tol_) {
          d[b] = d[a] + e;
          changed = true;
        }
      }
    }
    if (!changed) {
      pi_ = d;
      return Status::ok();
    }
  }
  return internal_error("coverage solver: negative cycle in the initial residual graph");
}

// Covers deficit x along a shortest path. Dijkstra stops as soon as no
// unsettled node can beat the best finish found: with D the smallest
// unsettled key, any unsettled n costs at least D + min_m (pi[m] - w[m][x]).
// Potentials then rise by the settled distances and by D elsewhere (the
// usual cap), which keeps every reduced cost non-negative: the path's nodes
// are settled, and x's own potential can be taken as pi[n_L] - w[n_L][x],
// which is at most pi[m] - w[m][x] for every other node m by the stop rule.
Status Solver::cover(ExpertIndex x, CoverageSolution* out) {
  std::vector<double> dh(n_nodes_);
  std::vector<int32_t> pred(n_nodes_, -1);
  std::vector<uint8_t> done(n_nodes_, 0);
  double finish_floor = kInf;  // min over nodes of pi[n] - w[n][x]
  for (int32_t n = 0; n < n_nodes_; ++n) {
    double reduced = std::min(start_[n], big_) - pi_[n];
    if (reduced < -tol_) ++n_violations_;
    dh[n] = std::max(0.0, reduced);
    finish_floor = std::min(finish_floor, pi_[n] - w_[n][x]);
  }
  int32_t best = -1;
  double best_cost = kInf;
  double cap = kInf;
  for (int32_t iter = 0; iter < n_nodes_; ++iter) {
    int32_t a = -1;
    for (int32_t n = 0; n < n_nodes_; ++n) {
      if (!done[n] && (a < 0 || dh[n] < dh[a])) a = n;
    }
    if (best >= 0 && dh[a] + finish_floor >= best_cost) {
      cap = dh[a];
      break;
    }
    done[a] = 1;
    const double cost = dh[a] + pi_[a] - w_[a][x];
    if (cost < best_cost) {
      best_cost = cost;
      best = a;
    }
    const double* row = &edge_[pair(a, 0)];
    for (int32_t b = 0; b < n_nodes_; ++b) {
      if (done[b] || row[b] == kInf) continue;
      double reduced = row[b] + pi_[a] - pi_[b];
      if (reduced < -tol_) ++n_violations_;
      reduced = std::max(0.0, reduced);
      if (dh[a] + reduced < dh[b]) {
        dh[b] = dh[a] + reduced;
        pred[b] = a;
      }
    }
  }
  for (int32_t n = 0; n < n_nodes_; ++n) pi_[n] += done[n] ? dh[n] : cap;  // all done if no stop
  if (best < 0 || pi_[best] >= big_ * 0.5) {
    return internal_error("coverage solver: no augmenting path covers item " + std::to_string(x));
  }
  std::vector<int32_t> path;
  for (int32_t n = best; n >= 0; n = pred[n]) path.push_back(n);
  std::reverse(path.begin(), path.end());
  // Apply: the first node frees a slot, each hop hands an item over, the last
  // node takes the deficit item. Edge items refer to the sets before the path.
  std::vector<ExpertIndex> hop_items;
  for (size_t i = 1; i < path.size(); ++i)
    hop_items.push_back(edge_item_[pair(path[i - 1], path[i])]);
  const ExpertIndex start_item = start_item_[path.front()];
  // What each path node gives up and takes (-1: a free slot was used).
  std::vector<ExpertIndex> dropped(path.size()), added(path.size());
  dropped[0] = start_item;
  for (size_t i = 1; i < path.size(); ++i) {
    added[i - 1] = hop_items[i - 1];
    dropped[i] = hop_items[i - 1];
  }
  added.back() = x;
  if (start_item >= 0) drop(path.front(), start_item);
  for (size_t i = 1; i < path.size(); ++i) {
    add(path[i - 1], hop_items[i - 1]);
    drop(path[i], hop_items[i - 1]);
  }
  add(best, x);
  out->n_path_nodes += static_cast<int64_t>(path.size());
  // An edge item dies only when its column node drops it or its row node
  // adds it; those edges are recomputed, all others stay exact.
  for (size_t i = 0; i < path.size(); ++i) {
    const int32_t v = path[i];
    for (int32_t a = 0; a < n_nodes_; ++a) {
      if (a == v) continue;
      if (dropped[i] >= 0 && edge_item_[pair(a, v)] == dropped[i]) refresh_edge(a, v);
      if (edge_item_[pair(v, a)] == added[i]) refresh_edge(v, a);
    }
  }
  for (int32_t n = 0; n < n_nodes_; ++n) compute_start(n);
  return Status::ok();
}

Status Solver::run(CoverageSolution* out) {
  greedy_start();
  std::vector<ExpertIndex> deficits;
  for (ExpertIndex x = 0; x < n_items_; ++x) {
    if (count_[x] == 0) deficits.push_back(x);
  }
  out->n_deficits = static_cast<int64_t>(deficits.size());
  if (!deficits.empty()) {
    for (int32_t a = 0; a < n_nodes_; ++a) {
      for (int32_t b = 0; b < n_nodes_; ++b) {
        if (a != b) initial_edge(a, b);
      }
    }
    heaps_ready_ = true;
    for (int32_t n = 0; n < n_nodes_; ++n) compute_start(n);
    DMOE_RETURN_IF_ERROR(initial_potentials());
    for (ExpertIndex x : deficits) DMOE_RETURN_IF_ERROR(cover(x, out));
  }
  out->n_potential_violations = n_violations_;
  out->sets.assign(n_nodes_, {});
  out->objective = 0.0;
  for (int32_t n = 0; n < n_nodes_; ++n) {
    out->sets[n] = sets_[n];
    std::sort(out->sets[n].begin(), out->sets[n].end());
    for (ExpertIndex x : out->sets[n]) out->objective += w_[n][x];
  }
  return Status::ok();
}

}  // namespace

Result<CoverageSolution> solve_coverage(const CoverageInstance& instance) {
  if (instance.weight == nullptr || instance.weight->empty()) {
    return invalid_argument("coverage solver: no weights");
  }
  const int32_t n_nodes = static_cast<int32_t>(instance.weight->size());
  const int32_t n_items = static_cast<int32_t>(instance.weight->front().size());
  if (instance.slots.size() != static_cast<size_t>(n_nodes)) {
    return invalid_argument("coverage solver: " + std::to_string(instance.slots.size()) +
                            " slot counts for " + std::to_string(n_nodes) + " nodes");
  }
  int64_t total_slots = 0;
  for (int32_t n = 0; n < n_nodes; ++n) {
    if ((*instance.weight)[n].size() != static_cast<size_t>(n_items)) {
      return invalid_argument("coverage solver: weight rows differ in length");
    }
    for (double v : (*instance.weight)[n]) {
      if (!std::isfinite(v)) return invalid_argument("coverage solver: non-finite weight");
    }
    if (instance.slots[n] < 0) return invalid_argument("coverage solver: negative slot count");
    total_slots += std::min<int64_t>(instance.slots[n], n_items);
  }
  if (total_slots < n_items) {
    return resource_exhausted("coverage solver: " + std::to_string(total_slots) +
                              " slots cannot hold " + std::to_string(n_items) + " items once");
  }
  CoverageSolution solution;
  Solver solver(instance, n_nodes, n_items);
  DMOE_RETURN_IF_ERROR(solver.run(&solution));
  return solution;
}

}  // namespace dancemoe::placement
