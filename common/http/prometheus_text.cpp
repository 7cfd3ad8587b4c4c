#include "common/http/prometheus_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dancemoe::http {
namespace {

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string escape(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

BucketHistogram::BucketHistogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void BucketHistogram::observe(double value) {
  const size_t idx = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                         bounds_.begin());
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[idx];
  sum_ += value;
  ++count_;
}

BucketHistogram::Snapshot BucketHistogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

std::vector<double> request_seconds_buckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

std::vector<double> call_seconds_buckets() {
  return {50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 0.1, 0.25, 1};
}

void PrometheusWriter::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += help;
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusWriter::write_labels(const Labels& labels,
                                    const std::pair<std::string, std::string>* extra) {
  if (labels.empty() && extra == nullptr) return;
  out_ += '{';
  bool first = true;
  auto one = [&](const std::pair<std::string, std::string>& l) {
    if (!first) out_ += ',';
    first = false;
    out_ += l.first;
    out_ += "=\"";
    out_ += escape(l.second);
    out_ += '"';
  };
  for (const auto& l : labels) one(l);
  if (extra != nullptr) one(*extra);
  out_ += '}';
}

void PrometheusWriter::sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  write_labels(labels, nullptr);
  out_ += ' ';
  out_ += number(value);
  out_ += '\n';
}

void PrometheusWriter::histogram(std::string_view name, const Labels& labels,
                                 const BucketHistogram::Snapshot& s) {
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i < s.cumulative.size(); ++i) {
    const std::pair<std::string, std::string> le = {
        "le", i < s.upper_bounds.size() ? number(s.upper_bounds[i]) : "+Inf"};
    out_ += bucket;
    write_labels(labels, &le);
    out_ += ' ';
    out_ += number(static_cast<double>(s.cumulative[i]));
    out_ += '\n';
  }
  sample(std::string(name) + "_sum", labels, s.sum);
  sample(std::string(name) + "_count", labels, static_cast<double>(s.count));
}

}  // namespace dancemoe::http
