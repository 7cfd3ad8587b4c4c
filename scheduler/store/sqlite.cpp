#include "scheduler/store/sqlite.h"

#include <sqlite3.h>

#include <utility>

namespace dancemoe::store {

// ------------------------------------------------------------------ Statement

Statement::Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql)
    : db_(db), stmt_(stmt), sql_(std::move(sql)) {}

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      stmt_(std::exchange(other.stmt_, nullptr)),
      sql_(std::move(other.sql_)),
      bind_error_(std::exchange(other.bind_error_, 0)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
    sql_ = std::move(other.sql_);
    bind_error_ = std::exchange(other.bind_error_, 0);
  }
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::bind(int index, double value) {
  const int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  const int rc =
      sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::bind_blob(int index, std::span<const uint8_t> bytes) {
  // A zero-length blob must still be a blob, not NULL: pass a valid pointer.
  static const uint8_t kEmpty = 0;
  const void* data = bytes.empty() ? &kEmpty : bytes.data();
  const int rc = sqlite3_bind_blob64(stmt_, index, data, bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Statement& Statement::bind_null(int index) {
  const int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK && bind_error_ == 0) bind_error_ = rc;
  return *this;
}

Status Statement::error(int rc) const {
  const std::string message = std::string(sqlite3_errstr(rc)) +
                              (db_ != nullptr ? std::string(" (") + sqlite3_errmsg(db_) + ")" : "");
  const StatusCode code =
      rc == SQLITE_BUSY || rc == SQLITE_LOCKED || rc == SQLITE_FULL || rc == SQLITE_IOERR
          ? StatusCode::kUnavailable
          : StatusCode::kInternal;
  return Status(code, "SQLite: " + message + " in: " + sql_);
}

Result<bool> Statement::step() {
  if (bind_error_ != 0) {
    const int rc = std::exchange(bind_error_, 0);
    return error(rc);
  }
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return error(rc);
}

Status Statement::run() {
  while (true) {
    DMOE_ASSIGN_OR_RETURN(const bool row, step());
    if (!row) break;
  }
  reset();
  return Status::ok();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_ = 0;
}

int64_t Statement::column_int(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::column_double(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::column_text(int column) const {
  const auto* text = sqlite3_column_text(stmt_, column);
  const int n = sqlite3_column_bytes(stmt_, column);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text), n);
}

std::span<const uint8_t> Statement::column_blob_view(int column) const {
  const auto* data = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, column));
  const int n = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr || n <= 0) return {};
  return {data, static_cast<size_t>(n)};
}

std::vector<uint8_t> Statement::column_blob(int column) const {
  const auto view = column_blob_view(column);
  return {view.begin(), view.end()};
}

bool Statement::column_is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

// ------------------------------------------------------------------- Database

Result<std::unique_ptr<Database>> Database::open(const std::string& path, const Options& options) {
  std::unique_ptr<Database> db(new Database());
  db->path_ = path;
  int flags = options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (options.create && !options.read_only) flags |= SQLITE_OPEN_CREATE;
  flags |= SQLITE_OPEN_NOMUTEX;  // one thread per connection (see the header)
  const int rc = sqlite3_open_v2(path.c_str(), &db->db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db->db_ != nullptr ? sqlite3_errmsg(db->db_) : sqlite3_errstr(rc);
    return unavailable(path + ": cannot open the SQLite database: " + message);
  }
  sqlite3_extended_result_codes(db->db_, 0);
  sqlite3_busy_timeout(db->db_, options.busy_timeout_ms);
  return db;
}

Database::~Database() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Status Database::exec(const std::string& sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string text = message != nullptr ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    const StatusCode code = rc == SQLITE_BUSY || rc == SQLITE_FULL || rc == SQLITE_IOERR
                                ? StatusCode::kUnavailable
                                : StatusCode::kInternal;
    return Status(code, path_ + ": SQLite: " + text + " in: " + sql);
  }
  return Status::ok();
}

Result<Statement> Database::prepare(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    return internal_error(path_ + ": SQLite cannot prepare: " + sqlite3_errmsg(db_) +
                          " in: " + sql);
  }
  return Statement(db_, stmt, sql);
}

Result<std::optional<int64_t>> Database::query_int(const std::string& sql) {
  DMOE_ASSIGN_OR_RETURN(Statement stmt, prepare(sql));
  DMOE_ASSIGN_OR_RETURN(const bool row, stmt.step());
  if (!row || stmt.column_is_null(0)) return std::optional<int64_t>();
  return std::optional<int64_t>(stmt.column_int(0));
}

int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int64_t Database::changes() const { return sqlite3_changes64(db_); }

// ---------------------------------------------------------------- Transaction

Result<Transaction> Transaction::begin(Database& db) {
  DMOE_RETURN_IF_ERROR(db.exec("BEGIN IMMEDIATE"));
  return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() {
  // Best effort: a failed rollback leaves SQLite to roll back on close.
  if (db_ != nullptr) (void)db_->exec("ROLLBACK");
}

Status Transaction::commit() {
  if (db_ == nullptr) return internal_error("commit of a finished transaction");
  Database* db = std::exchange(db_, nullptr);
  const Status status = db->exec("COMMIT");
  if (!status.is_ok()) (void)db->exec("ROLLBACK");
  return status;
}

}  // namespace dancemoe::store
