// A TCP port on 127.0.0.1 held open (bound and listening) by the test, so
// that whatever tries to bind it finds it in use. Closed by close() or the
// destructor. Not thread-safe.
#pragma once

namespace dancemoe::testing {

class ListeningPort {
 public:
  ListeningPort();  // an ephemeral port; REQUIREs success
  ~ListeningPort();
  ListeningPort(const ListeningPort&) = delete;
  ListeningPort& operator=(const ListeningPort&) = delete;

  int port() const { return port_; }
  void close();

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace dancemoe::testing
