// ExpertResidency: a device's own copy of the experts the ExpertStore holds
// for it -- a GPU keeps each expert of its device in a slot of GPU memory
// besides the host copy the store owns. The store calls it as experts
// arrive and leave (migrations), so a device follows the placement without
// the store knowing what a GPU is. CPU devices compute from the host copy
// and have none.
//
// Implementations are thread-safe: the store calls them from loader
// threads while engines compute.
#pragma once

#include <memory>

#include "common/base/status.h"

namespace dancemoe {

struct ExpertWeights;

class ExpertResidency {
 public:
  virtual ~ExpertResidency() = default;
  // The host copy of `expert` is complete; make the device's copy before
  // the store publishes it. An error fails the load (nothing is published).
  virtual Status make_resident(const std::shared_ptr<const ExpertWeights>& expert) = 0;
  // The store dropped `expert` (computations that pinned it may still run).
  virtual void release(const ExpertWeights& expert) = 0;
};

}  // namespace dancemoe
