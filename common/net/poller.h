// Poller: waits until one of several ZeroMQ sockets has a message to read
// (or a plain file descriptor is readable).
// The one place outside zmq_transport.h that touches zmq_poll, so that the
// rest of the code never catches zmq::error_t: a timeout and an interrupted
// wait (EINTR) are expected outcomes -- wait() returns false and callers loop
// -- and anything else is a Status.
//
// Keep one Poller per loop and re-add sockets only when the set changes; it
// allocates nothing per wait. One thread, like the sockets it polls.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>
#include <zmq.hpp>

#include "common/base/status.h"

namespace dancemoe::net {

class Poller {
 public:
  void clear() { items_.clear(); }
  // Returns the socket's index for readable(). The socket must outlive the
  // next wait().
  size_t add(zmq::socket_t& socket);
  // A file descriptor polled for reading beside the sockets (an eventfd
  // another thread writes to wake the loop); its index for readable().
  size_t add_fd(int fd);
  size_t size() const { return items_.size(); }

  // True when some socket is readable; false after `timeout` or an
  // interrupted wait. A negative timeout is taken as zero.
  Result<bool> wait(std::chrono::milliseconds timeout);
  bool readable(size_t index) const { return (items_[index].revents & ZMQ_POLLIN) != 0; }

 private:
  std::vector<zmq::pollitem_t> items_;
};

}  // namespace dancemoe::net
