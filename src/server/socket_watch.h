// Noticing that an HTTP client went away while its request is still generating.
//
// cpp-httplib does not hand a handler its connection, and its writes only fail a token or two
// after the peer closed. So the handler finds its own socket once (the one connected to the
// request's remote address and port; the connection stays open while the handler runs) and
// polls it for POLLRDHUP/POLLHUP: a client that closes or resets shows up within one poll.
#pragma once

#include <string>

namespace ridge::server {

class SocketWatch {
 public:
  SocketWatch() = default;
  // Looks up the socket whose local port is `local_port` and whose peer is remote_addr:port.
  SocketWatch(const std::string& remote_addr, int remote_port, int local_port);
  bool found() const { return fd_ >= 0; }
  // True when the peer has closed or reset the connection (never blocks).
  bool peer_closed() const;

 private:
  int fd_ = -1;
};

}  // namespace ridge::server
