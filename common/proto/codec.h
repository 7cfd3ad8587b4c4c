// Encoding and decoding of protocol envelopes (FlatBuffers underneath).
//
// decode() never trusts its input: the buffer is size-limited, checked with
// the FlatBuffers verifier, and every field is range-checked (strings and
// lists bounded, numbers finite, token indices inside the call, hash
// lengths exact) before a value is returned. A different protocol major
// version is a version_mismatch naming both versions. Model-dependent
// ranges (layer and expert indices) are the receiver's to check, against
// its model. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/base/status.h"
#include "common/proto/messages.h"

namespace dancemoe::proto {

struct DecodeLimits {
  size_t max_envelope_bytes = size_t{64} << 20;
  size_t max_string_bytes = 4096;            // ids, endpoints, reasons
  size_t max_json_bytes = size_t{16} << 20;  // StatusReply / StatusRequest JSON
  size_t max_list_entries = size_t{1} << 22;
  uint32_t max_tokens = 1 << 16;  // per ExpertCall / ExpertResult
  uint32_t max_hidden = 1 << 16;
};

std::vector<uint8_t> encode(const Envelope& envelope);

Result<Envelope> decode(std::span<const uint8_t> bytes, const DecodeLimits& limits = {});

// The envelope's sequence number when `bytes` pass the size limit and the
// FlatBuffers verifier, whatever the body's values: a receiver that refuses
// a message for a bad field can still name it (Error.in_reply_to), so the
// sender stops resending it. nullopt when the bytes are not an envelope.
std::optional<uint64_t> peek_sequence(std::span<const uint8_t> bytes,
                                      const DecodeLimits& limits = {});

// Checks a raw tensor frame against its description: n_tokens x hidden
// elements of dtype, exactly.
Status check_tensor_payload(DType dtype, uint32_t n_tokens, uint32_t hidden, size_t payload_bytes,
                            std::string_view what);

}  // namespace dancemoe::proto
