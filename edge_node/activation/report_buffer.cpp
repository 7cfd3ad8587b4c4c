#include "edge_node/activation/report_buffer.h"

namespace dancemoe::node {

void ReportBuffer::push(uint64_t sequence, proto::ActivationReport report) {
  if (entries_.size() >= capacity_) {
    entries_.pop_front();
    ++dropped_;
  }
  entries_.push_back(Entry{sequence, std::move(report), false, {}});
}

bool ReportBuffer::ack(uint64_t sequence) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->sequence == sequence) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

std::vector<std::pair<uint64_t, proto::ActivationReport>> ReportBuffer::due(Millis now,
                                                                            Millis resend_after) {
  std::vector<std::pair<uint64_t, proto::ActivationReport>> out;
  for (Entry& e : entries_) {
    if (!e.sent || now - e.sent_at >= resend_after) {
      e.sent = true;
      e.sent_at = now;
      out.emplace_back(e.sequence, e.report);
    }
  }
  return out;
}

void ReportBuffer::mark_all_unsent() {
  for (Entry& e : entries_) e.sent = false;
}

}  // namespace dancemoe::node
