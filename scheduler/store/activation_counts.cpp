#include "scheduler/store/activation_counts.h"

#include "scheduler/store/count_blob.h"

namespace dancemoe::store {

Result<std::map<std::string, std::vector<double>>> read_counts_since(Database& db, int64_t since_ms,
                                                                     const CountIndex& index) {
  std::map<std::string, std::vector<double>> out;
  static const char* kQueries[] = {
      "SELECT node_id, counts FROM reports WHERE received_ms >= ?",
      "SELECT node_id, counts FROM rollups WHERE bucket_start_ms + bucket_ms > ?"};
  std::string node;
  std::vector<double>* target = nullptr;
  for (const char* sql : kQueries) {
    DMOE_ASSIGN_OR_RETURN(Statement s, db.prepare(sql));
    s.bind(1, since_ms);
    while (true) {
      DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
      if (!row) break;
      const std::string id = s.column_text(0);
      if (target == nullptr || id != node) {
        node = id;
        std::vector<double>& v = out[node];
        if (v.empty()) v.assign(index.n_total, 0.0);
        target = &v;
      }
      std::vector<double>& counts = *target;
      DMOE_RETURN_IF_ERROR(
          decode_counts(s.column_blob_view(1), [&counts, &index](const CountEntry& e) {
            const int32_t x = index.flat(e.layer, e.expert);
            if (x >= 0) counts[x] += static_cast<double>(e.count);
          }).with_context(db.path() + ": reports of node " + id));
    }
  }
  return out;
}

}  // namespace dancemoe::store
