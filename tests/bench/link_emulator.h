// LinkEmulator: a userspace stand-in for `tc netem delay D rate R` where the
// kernel has no sch_netem (this machine's does not): a TCP relay on
// 127.0.0.1 that forwards every connection to a target port, each direction
// shaped as a link -- bytes leave at most at `rate`, then arrive `delay`
// later. Peers connect to port() instead of the target. One thread, epoll
// and an absolute timerfd (sub-millisecond delays). Benchmarks only
// (header-only: every tests/bench/*.cpp is its own executable).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dancemoe::bench {

class LinkEmulator {
 public:
  LinkEmulator(int target_port, double delay_ms, double bits_per_s)
      : target_port_(target_port),
        delay_ns_(static_cast<int64_t>(delay_ms * 1e6)),
        ns_per_byte_(bits_per_s > 0 ? 8e9 / bits_per_s : 0) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in addr = loopback(0);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 64) != 0) {
      throw std::runtime_error("link emulator: cannot listen");
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    epoll_fd_ = ::epoll_create1(0);
    timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    add(listen_fd_, EPOLLIN);
    add(timer_fd_, EPOLLIN);
    thread_ = std::thread([this] { run(); });
  }
  ~LinkEmulator() {
    stop_.store(true);
    thread_.join();
    for (auto& [fd, d] : directions_) ::close(fd);
    ::close(listen_fd_);
    ::close(timer_fd_);
    ::close(epoll_fd_);
  }
  int port() const { return port_; }

 private:
  struct Chunk {
    int64_t release_ns;
    std::vector<char> bytes;
    size_t sent = 0;
  };
  // Bytes read from `from`, to be written to `to` when released.
  struct Direction {
    int to = -1;
    std::deque<Chunk> queue;
    int64_t busy_until_ns = 0;
    bool eof = false;
  };

  static sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    return a;
  }
  static int64_t now_ns() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  }
  void add(int fd, uint32_t events) {
    epoll_event e{};
    e.events = events;
    e.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
  }
  void close_pair(int fd) {
    auto it = directions_.find(fd);
    if (it == directions_.end()) return;
    const int other = it->second.to;
    for (int f : {fd, other}) {
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, f, nullptr);
      ::close(f);
      directions_.erase(f);
    }
  }
  void accept_all() {
    while (true) {
      const int in = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK);
      if (in < 0) return;
      const int out = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in target = loopback(target_port_);
      if (::connect(out, reinterpret_cast<sockaddr*>(&target), sizeof target) != 0) {
        ::close(in);
        ::close(out);
        continue;
      }
      ::fcntl(out, F_SETFL, ::fcntl(out, F_GETFL) | O_NONBLOCK);
      const int one = 1;
      for (int fd : {in, out}) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      directions_[in].to = out;
      directions_[out].to = in;
      add(in, EPOLLIN);
      add(out, EPOLLIN);
    }
  }
  void read_from(int fd) {
    Direction& d = directions_[fd];
    char buffer[64 * 1024];
    while (true) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n > 0) {
        const int64_t now = now_ns();
        // Serialisation at the link rate, then propagation delay.
        d.busy_until_ns = std::max(d.busy_until_ns, now) +
                          static_cast<int64_t>(ns_per_byte_ * static_cast<double>(n));
        d.queue.push_back({d.busy_until_ns + delay_ns_, std::vector<char>(buffer, buffer + n)});
        continue;
      }
      if (n == 0) d.eof = true;
      return;
    }
  }
  // Writes released chunks; returns false when the pair was closed.
  bool flush(int from) {
    Direction& d = directions_[from];
    const int64_t now = now_ns();
    while (!d.queue.empty() && d.queue.front().release_ns <= now) {
      Chunk& c = d.queue.front();
      const ssize_t n = ::write(d.to, c.bytes.data() + c.sent, c.bytes.size() - c.sent);
      if (n < 0) {
        if (errno == EAGAIN) return true;  // retried at the next wake-up
        close_pair(from);
        return false;
      }
      c.sent += static_cast<size_t>(n);
      if (c.sent == c.bytes.size()) d.queue.pop_front();
    }
    if (d.eof && d.queue.empty()) {
      close_pair(from);
      return false;
    }
    return true;
  }
  void arm_timer() {
    int64_t next = 0;
    for (auto& [fd, d] : directions_) {
      if (!d.queue.empty() && (next == 0 || d.queue.front().release_ns < next)) {
        next = d.queue.front().release_ns;
      }
    }
    itimerspec spec{};
    if (next > 0) {
      const int64_t at = std::max(next, now_ns() + 1000);
      spec.it_value.tv_sec = at / 1'000'000'000;
      spec.it_value.tv_nsec = at % 1'000'000'000;
    }
    ::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
  }
  void run() {
    epoll_event events[64];
    while (!stop_.load()) {
      arm_timer();
      const int n = ::epoll_wait(epoll_fd_, events, 64, 50);
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listen_fd_) {
          accept_all();
        } else if (fd == timer_fd_) {
          uint64_t expirations = 0;
          (void)!::read(timer_fd_, &expirations, sizeof expirations);
        } else if (directions_.count(fd)) {
          read_from(fd);
        }
      }
      std::vector<int> fds;
      for (auto& [fd, d] : directions_) fds.push_back(fd);
      for (int fd : fds) {
        if (directions_.count(fd)) flush(fd);
      }
    }
  }

  int target_port_;
  int64_t delay_ns_;
  double ns_per_byte_;
  int port_ = 0;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  std::map<int, Direction> directions_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace dancemoe::bench
