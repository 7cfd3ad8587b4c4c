#include "scheduler/store/store_inspect.h"

#include "scheduler/store/schema.h"
#include "scheduler/store/sqlite.h"

namespace dancemoe::store {
namespace {

Result<std::string> meta_value(Database& db, const char* key) {
  DMOE_ASSIGN_OR_RETURN(Statement get, db.prepare("SELECT value FROM meta WHERE key = ?"));
  get.bind(1, std::string_view(key));
  DMOE_ASSIGN_OR_RETURN(const bool row, get.step());
  return row ? get.column_text(0) : std::string();
}

}  // namespace

Result<StoreSummary> inspect_store(const std::string& path) {
  Database::Options options;
  options.read_only = true;
  options.create = false;
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::open(path, options));
  DMOE_RETURN_IF_ERROR(check_integrity(*db));
  StoreSummary out;
  DMOE_ASSIGN_OR_RETURN(std::optional<int64_t> version, db->query_int("PRAGMA user_version"));
  out.schema_version = static_cast<int>(version.value_or(0));
  if (out.schema_version > kSchemaVersion) {
    return failed_precondition(path + ": schema version " + std::to_string(out.schema_version) +
                               " is newer than this dancemoe-scheduler's (" +
                               std::to_string(kSchemaVersion) +
                               "): run the newer scheduler, or give this one another --db");
  }
  if (out.schema_version == 0) return out;  // an empty file: created at the first start
  DMOE_ASSIGN_OR_RETURN(out.model_id, meta_value(*db, "model_id"));
  DMOE_ASSIGN_OR_RETURN(out.cluster_id, meta_value(*db, "cluster_id"));
  DMOE_ASSIGN_OR_RETURN(std::optional<int64_t> nodes, db->query_int("SELECT COUNT(*) FROM nodes"));
  out.nodes = nodes.value_or(0);
  return out;
}

}  // namespace dancemoe::store
