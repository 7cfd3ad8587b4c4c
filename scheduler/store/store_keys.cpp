// Store: node ids bound to CURVE keys, and forgetting a node (store.h).
#include "scheduler/store/store.h"

namespace dancemoe::store {

Result<std::vector<KeyBinding>> Store::load_key_bindings() {
  std::vector<KeyBinding> out;
  DMOE_ASSIGN_OR_RETURN(Statement s, db_->prepare("SELECT node_id, public_key, key_name, bound_ms "
                                                  "FROM node_keys ORDER BY node_id"));
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, s.step());
    if (!row) break;
    out.push_back({s.column_text(0), s.column_text(1), s.column_text(2), s.column_int(3)});
  }
  return out;
}

Status Store::bind_node_key(const KeyBinding& binding) {
  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(*db_));
  {
    DMOE_ASSIGN_OR_RETURN(Statement find, db_->prepare("SELECT node_id FROM node_keys WHERE "
                                                       "node_id = ? OR public_key = ?"));
    find.bind(1, binding.node_id).bind(2, binding.public_key);
    DMOE_ASSIGN_OR_RETURN(const bool row, find.step());
    if (row) {
      return failed_precondition("node id '" + find.column_text(0) + "' is already bound to a key");
    }
  }
  DMOE_ASSIGN_OR_RETURN(Statement put, db_->prepare("INSERT INTO node_keys(node_id, public_key, "
                                                    "key_name, bound_ms) VALUES(?,?,?,?)"));
  put.bind(1, binding.node_id)
      .bind(2, binding.public_key)
      .bind(3, binding.key_name)
      .bind(4, binding.bound_ms);
  DMOE_RETURN_IF_ERROR(put.run());
  return txn.commit();
}

Status Store::forget_node(const std::string& node_id) {
  DMOE_ASSIGN_OR_RETURN(Transaction txn, Transaction::begin(*db_));
  {
    DMOE_ASSIGN_OR_RETURN(Statement find, db_->prepare("SELECT 1 FROM nodes WHERE node_id = ? "
                                                       "UNION SELECT 1 FROM node_keys WHERE "
                                                       "node_id = ?"));
    find.bind(1, node_id).bind(2, node_id);
    DMOE_ASSIGN_OR_RETURN(const bool known, find.step());
    if (!known) return not_found("no node '" + node_id + "' is known to the scheduler");
  }
  for (const char* sql :
       {"DELETE FROM devices WHERE node_id = ?", "DELETE FROM device_compute WHERE node_id = ?",
        "DELETE FROM nodes WHERE node_id = ?", "DELETE FROM node_keys WHERE node_id = ?"}) {
    DMOE_ASSIGN_OR_RETURN(Statement s, db_->prepare(sql));
    s.bind(1, node_id);
    DMOE_RETURN_IF_ERROR(s.run());
  }
  return txn.commit();
}

}  // namespace dancemoe::store
