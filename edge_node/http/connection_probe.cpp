#include "edge_node/http/connection_probe.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace dancemoe::node {
namespace {

// "127.0.0.1" / "::1" and a port, as the socket reports them.
bool same_endpoint(const sockaddr_storage& addr, const std::string& ip, int port) {
  char text[INET6_ADDRSTRLEN] = {};
  int got_port = -1;
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    got_port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    got_port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  return got_port == port && ip == text;
}

}  // namespace

ConnectionProbe::ConnectionProbe(const std::string& local_addr, int local_port,
                                 const std::string& remote_addr, int remote_port) {
  if (remote_port < 0 || local_port < 0) return;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd < 0) continue;
    struct stat st {};
    if (::fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (::getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &len) != 0) {
      continue;
    }
    if (!same_endpoint(peer, remote_addr, remote_port)) continue;
    sockaddr_storage local{};
    len = sizeof local;
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      continue;
    }
    if (!same_endpoint(local, local_addr, local_port)) continue;
    fd_ = static_cast<int>(fd);
    break;
  }
  ::closedir(dir);
}

bool ConnectionProbe::closed() {
  if (closed_ || fd_ < 0) return closed_;
  pollfd p{};
  p.fd = fd_;
  p.events = POLLRDHUP;
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) {
    closed_ = true;
  }
  return closed_;
}

}  // namespace dancemoe::node
