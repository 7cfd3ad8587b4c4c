// ExpertRef: the one identity of a routed expert -- its MoE layer (absolute
// layer index; dense layers hold none) and its index within the layer. Used
// by the model's expert store, placements, the wire protocol and the
// scheduler alike. On the wire both travel as uint16 (the codec checks the
// range); the placement solvers number experts densely with ExpertIndex
// (scheduler/placement/types.h), a position, not an identity. A plain value.
#pragma once

#include <compare>
#include <cstdint>

namespace dancemoe {

struct ExpertRef {
  int32_t layer = 0;
  int32_t expert = 0;
  friend bool operator==(const ExpertRef&, const ExpertRef&) = default;
  friend auto operator<=>(const ExpertRef&, const ExpertRef&) = default;
};

}  // namespace dancemoe
