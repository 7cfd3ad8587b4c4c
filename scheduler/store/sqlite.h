// A thin RAII layer over the SQLite C API: a Database owns one connection,
// a Statement owns one prepared statement, a Transaction rolls back unless
// committed. Every failure comes back as a Status naming the SQL and
// SQLite's message; nothing here throws.
//
// Thread-safety: a Database and its Statements belong to one thread (the
// scheduler's service loop); SQLite is built serialized, but sharing a
// connection would interleave transactions, which the store never wants.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dancemoe::store {

// SQLite's integers are signed 64-bit: counts, sizes and times go in as
// int64 and come back clamped at 0 (a negative value read from a file
// cannot become a huge unsigned one).
inline int64_t i64(uint64_t v) { return static_cast<int64_t>(v); }
inline uint64_t u64(int64_t v) { return v < 0 ? 0 : static_cast<uint64_t>(v); }

class Database;

// One prepared statement. Bind parameters are 1-based as in SQLite; columns
// are 0-based. step() returns true while a row is available, false when the
// statement is done; errors are Status. reset() makes it reusable.
class Statement {
 public:
  Statement() = default;
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view text);
  Statement& bind_blob(int index, std::span<const uint8_t> bytes);
  Statement& bind_null(int index);

  // Runs one step; Result<true> when a row is ready.
  Result<bool> step();
  // Steps to completion (for statements that return no rows).
  Status run();
  void reset();

  int64_t column_int(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;
  std::vector<uint8_t> column_blob(int column) const;
  // Pointer valid until the next step/reset.
  std::span<const uint8_t> column_blob_view(int column) const;
  bool column_is_null(int column) const;

 private:
  friend class Database;
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql);
  Status error(int rc) const;

  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
  // A bind error is remembered and reported by the next step().
  int bind_error_ = 0;
};

class Database {
 public:
  struct Options {
    bool read_only = false;
    bool create = true;
    int busy_timeout_ms = 5000;
  };

  // Opens (and creates) the database file; ":memory:" for an in-memory one.
  static Result<std::unique_ptr<Database>> open(const std::string& path, const Options& options);
  static Result<std::unique_ptr<Database>> open(const std::string& path) {
    return open(path, Options{});
  }
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more statements that return no rows.
  Status exec(const std::string& sql);
  Result<Statement> prepare(const std::string& sql);
  // A single integer (e.g. PRAGMA user_version); nullopt when no row.
  Result<std::optional<int64_t>> query_int(const std::string& sql);

  int64_t last_insert_rowid() const;
  int64_t changes() const;
  const std::string& path() const { return path_; }

 private:
  Database() = default;
  sqlite3* db_ = nullptr;
  std::string path_;
};

// BEGIN IMMEDIATE on construction (the writer takes the lock up front, so a
// transaction never fails half-way on a lock upgrade); ROLLBACK in the
// destructor unless commit() succeeded.
class Transaction {
 public:
  static Result<Transaction> begin(Database& db);
  ~Transaction();
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  Status commit();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_ = nullptr;
};

}  // namespace dancemoe::store
