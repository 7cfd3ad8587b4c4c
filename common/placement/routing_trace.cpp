#include "common/placement/routing_trace.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <string_view>
#include <tuple>

namespace dancemoe {
namespace {

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

bool parse_int(std::string_view text, int64_t* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

bool parse_double(std::string_view text, double* out) {
  // std::from_chars for double is available in libstdc++ 11+.
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

int find_column(const std::vector<std::string_view>& header,
                std::initializer_list<const char*> names) {
  for (size_t i = 0; i < header.size(); ++i) {
    for (const char* name : names) {
      if (header[i] == name) return static_cast<int>(i);
    }
  }
  return -1;
}

std::string where(const std::filesystem::path& path, int64_t line) {
  return path.string() + ":" + std::to_string(line);
}

std::string strip_cr(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// Column positions of a trace header (either naming of the origin and
// request columns), with top_k checked to be e0..e{k-1}.
struct Columns {
  int origin, request, token, layer, e0;
  int32_t top_k;
  size_t n_fields;
};

Result<Columns> read_header(const std::filesystem::path& path, const std::string& header_line) {
  const std::vector<std::string_view> header = split(header_line);
  Columns c{find_column(header, {"origin_node", "domain"}),
            find_column(header, {"request_id", "sequence_id"}),
            find_column(header, {"token_index"}),
            find_column(header, {"layer"}),
            find_column(header, {"e0"}),
            0,
            header.size()};
  if (c.origin < 0 || c.request < 0 || c.token < 0 || c.layer < 0 || c.e0 < 0) {
    return invalid_argument(where(path, 1) +
                            ": header must name origin_node (or domain), request_id (or "
                            "sequence_id), token_index, layer, e0..e{k-1}");
  }
  c.top_k = static_cast<int32_t>(header.size()) - c.e0;
  for (int32_t j = 0; j < c.top_k; ++j) {
    // Built with append: GCC 12 at -O3 warns falsely (-Wrestrict) on "e" + string.
    std::string name(1, 'e');
    name.append(std::to_string(j));
    if (header[c.e0 + j] != name) {
      return invalid_argument(where(path, 1) + ": expected column e" + std::to_string(j) +
                              " after e0, found '" + std::string(header[c.e0 + j]) + "'");
    }
  }
  return c;
}

struct Row {
  int32_t origin;
  int64_t request;
  int64_t token;
  int64_t layer;
  std::vector<int16_t> experts;
};

// One data line; new origins are appended to trace->origins, and the trace's
// max_expert and n_layers grow with what the row names.
Result<Row> read_row(const std::string& line, const Columns& c, const std::string& at,
                     RoutingTrace* trace) {
  const std::vector<std::string_view> fields = split(line);
  if (fields.size() != c.n_fields) {
    return invalid_argument(at + ": expected " + std::to_string(c.n_fields) + " fields, found " +
                            std::to_string(fields.size()));
  }
  Row row;
  const std::string origin(fields[c.origin]);
  if (origin.empty()) return invalid_argument(at + ": empty origin");
  int32_t o = trace->origin_index(origin);
  if (o < 0) {
    o = static_cast<int32_t>(trace->origins.size());
    trace->origins.push_back(origin);
  }
  row.origin = o;
  if (!parse_int(fields[c.request], &row.request) || !parse_int(fields[c.token], &row.token) ||
      !parse_int(fields[c.layer], &row.layer) || row.token < 0 || row.layer < 0 ||
      row.layer > 100000 || row.token > 10'000'000) {
    return invalid_argument(at + ": request_id, token_index and layer must be integers >= 0");
  }
  for (int32_t j = 0; j < c.top_k; ++j) {
    int64_t e = 0;
    if (!parse_int(fields[c.e0 + j], &e) || e < 0 || e > 32767) {
      return invalid_argument(at + ": e" + std::to_string(j) +
                              " must be an expert id in 0..32767, got '" +
                              std::string(fields[c.e0 + j]) + "'");
    }
    row.experts.push_back(static_cast<int16_t>(e));
    trace->max_expert = std::max<int32_t>(trace->max_expert, static_cast<int32_t>(e));
  }
  trace->n_layers = std::max<int32_t>(trace->n_layers, static_cast<int32_t>(row.layer) + 1);
  return row;
}

// Rows sorted by (origin, request, token, layer) become requests; each must
// hold every layer of every token once.
Status group_requests(const std::filesystem::path& path, const std::vector<Row>& rows,
                      RoutingTrace* trace) {
  size_t i = 0;
  while (i < rows.size()) {
    TraceRequest request;
    request.origin = rows[i].origin;
    request.id = rows[i].request;
    size_t j = i;
    while (j < rows.size() && rows[j].origin == request.origin && rows[j].request == request.id) {
      ++j;
    }
    const std::string which = path.string() + ": request " + std::to_string(request.id) +
                              " of origin '" + trace->origins[request.origin] + "'";
    const int64_t n_rows = static_cast<int64_t>(j - i);
    if (n_rows % trace->n_layers != 0) {
      return invalid_argument(which + " has " + std::to_string(n_rows) +
                              " rows, not a multiple of the " + std::to_string(trace->n_layers) +
                              " layers");
    }
    request.n_tokens = static_cast<int32_t>(n_rows / trace->n_layers);
    for (size_t r = i; r < j; ++r) {
      const int64_t k = static_cast<int64_t>(r - i);
      if (rows[r].token != k / trace->n_layers || rows[r].layer != k % trace->n_layers) {
        return invalid_argument(which + " lacks token " + std::to_string(k / trace->n_layers) +
                                " layer " + std::to_string(k % trace->n_layers) +
                                " (or has it twice)");
      }
      request.experts.insert(request.experts.end(), rows[r].experts.begin(), rows[r].experts.end());
    }
    trace->requests.push_back(std::move(request));
    i = j;
  }
  return Status::ok();
}

}  // namespace

int32_t RoutingTrace::origin_index(const std::string& id) const {
  auto it = std::find(origins.begin(), origins.end(), id);
  return it == origins.end() ? -1 : static_cast<int32_t>(it - origins.begin());
}

int32_t CountsTable::origin_index(const std::string& id) const {
  auto it = std::find(origins.begin(), origins.end(), id);
  return it == origins.end() ? -1 : static_cast<int32_t>(it - origins.begin());
}

Result<RoutingTrace> read_routing_trace(const std::filesystem::path& path) {
  std::ifstream file(path);
  if (!file) return not_found(path.string() + ": cannot open the trace file");
  std::string line;
  if (!std::getline(file, line)) return invalid_argument(path.string() + ": empty file");
  DMOE_ASSIGN_OR_RETURN(const Columns columns, read_header(path, strip_cr(line)));
  RoutingTrace trace;
  trace.top_k = columns.top_k;
  std::vector<Row> rows;
  int64_t line_no = 1;
  while (std::getline(file, line)) {
    ++line_no;
    line = strip_cr(line);
    if (line.empty()) continue;
    DMOE_ASSIGN_OR_RETURN(Row row, read_row(line, columns, where(path, line_no), &trace));
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return invalid_argument(path.string() + ": no data rows");
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(a.origin, a.request, a.token, a.layer) <
           std::tie(b.origin, b.request, b.token, b.layer);
  });
  DMOE_RETURN_IF_ERROR(group_requests(path, rows, &trace));
  return trace;
}

Status write_routing_trace(const std::filesystem::path& path, const RoutingTrace& trace) {
  std::ofstream file(path);
  if (!file) return unavailable(path.string() + ": cannot open for writing");
  file << "origin_node,request_id,token_index,layer";
  for (int32_t j = 0; j < trace.top_k; ++j) file << ",e" << j;
  file << "\n";
  for (const TraceRequest& request : trace.requests) {
    for (int32_t t = 0; t < request.n_tokens; ++t) {
      for (int32_t l = 0; l < trace.n_layers; ++l) {
        file << trace.origins[request.origin] << "," << request.id << "," << t << "," << l;
        const size_t base = (static_cast<size_t>(t) * trace.n_layers + l) * trace.top_k;
        for (int32_t j = 0; j < trace.top_k; ++j) file << "," << request.experts[base + j];
        file << "\n";
      }
    }
  }
  file.flush();
  if (!file) return unavailable(path.string() + ": write failed");
  return Status::ok();
}

Result<CountsTable> read_counts_csv(const std::filesystem::path& path, int32_t n_layers,
                                    int32_t n_experts) {
  std::ifstream file(path);
  if (!file) return not_found(path.string() + ": cannot open the counts file");
  std::string line;
  if (!std::getline(file, line)) return invalid_argument(path.string() + ": empty file");
  const std::string header_line = strip_cr(line);  // the views below point into it
  const std::vector<std::string_view> header = split(header_line);
  const int c_origin = find_column(header, {"origin_node", "domain"});
  const int c_layer = find_column(header, {"layer"});
  const int c_expert = find_column(header, {"expert"});
  const int c_count = find_column(header, {"count"});
  if (c_origin < 0 || c_layer < 0 || c_expert < 0 || c_count < 0) {
    return invalid_argument(where(path, 1) +
                            ": header must name origin_node (or domain), layer, expert, count");
  }
  CountsTable table;
  table.n_layers = n_layers;
  table.n_experts = n_experts;
  int64_t line_no = 1;
  while (std::getline(file, line)) {
    ++line_no;
    line = strip_cr(line);
    if (line.empty()) continue;
    const std::vector<std::string_view> fields = split(line);
    if (fields.size() != header.size()) {
      return invalid_argument(where(path, line_no) + ": expected " + std::to_string(header.size()) +
                              " fields, found " + std::to_string(fields.size()));
    }
    int64_t layer = 0, expert = 0;
    double count = 0;
    if (!parse_int(fields[c_layer], &layer) || !parse_int(fields[c_expert], &expert) ||
        !parse_double(fields[c_count], &count) || !(count >= 0)) {
      return invalid_argument(where(path, line_no) +
                              ": layer and expert must be integers, count a number >= 0");
    }
    if (layer < 0 || layer >= n_layers || expert < 0 || expert >= n_experts) {
      return invalid_argument(where(path, line_no) + ": layer " + std::to_string(layer) +
                              " expert " + std::to_string(expert) + " is outside the model's " +
                              std::to_string(n_layers) + " x " + std::to_string(n_experts));
    }
    const std::string origin(fields[c_origin]);
    int32_t o = table.origin_index(origin);
    if (o < 0) {
      o = static_cast<int32_t>(table.origins.size());
      table.origins.push_back(origin);
      table.counts.emplace_back(static_cast<size_t>(n_layers) * n_experts, 0.0);
    }
    table.counts[o][static_cast<size_t>(layer) * n_experts + expert] += count;
  }
  return table;
}

}  // namespace dancemoe
