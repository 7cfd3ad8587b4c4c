// RequestStream: the httplib::Stream a handler thread serves one request
// on. The request's bytes were read by ConnectionGate (connection_gate.h)
// and are handed over whole, so reads come from memory and never wait for
// the client; writes go to the socket, each waiting at most the write
// timeout for room (a client that stops reading cannot hold the thread
// longer than that per write).
//
// Borrows the socket (the caller closes it). Not thread-safe: one per
// request, used by the thread that serves it.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>

namespace dancemoe::http {

class RequestStream final : public httplib::Stream {
 public:
  RequestStream(int fd, std::string request, std::chrono::milliseconds write_timeout)
      : fd_(fd), request_(std::move(request)), write_timeout_(write_timeout) {}

  bool is_readable() const override { return read_at_ < request_.size(); }
  bool is_writable() const override;
  // From the request's bytes; 0 (end of stream) once they are used up.
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  std::string request_;
  size_t read_at_ = 0;
  std::chrono::milliseconds write_timeout_;
};

}  // namespace dancemoe::http
