#include "common/net/poller.h"

#include <cerrno>

namespace dancemoe::net {

size_t Poller::add(zmq::socket_t& socket) {
  items_.push_back({socket.handle(), 0, ZMQ_POLLIN, 0});
  return items_.size() - 1;
}

size_t Poller::add_fd(int fd) {
  items_.push_back({nullptr, fd, ZMQ_POLLIN, 0});
  return items_.size() - 1;
}

Result<bool> Poller::wait(std::chrono::milliseconds timeout) {
  for (zmq::pollitem_t& item : items_) item.revents = 0;
  try {
    return zmq::poll(items_.data(), items_.size(),
                     std::max(timeout, std::chrono::milliseconds(0))) > 0;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    return unavailable(std::string("poll failed: ") + e.what());
  }
}

}  // namespace dancemoe::net
