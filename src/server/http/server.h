// An HTTP/1.1 server built to face hostile clients (docs/server.md, "Security").
//
// One I/O thread (Boost.Asio) accepts connections and reads every request asynchronously with
// Boost.Beast's parser, so a slow or idle client costs a socket, never a thread:
//   - the header must arrive within header_timeout_s of its first byte (or of the connection),
//     the whole request within request_timeout_s; idle keep-alive connections close after
//     keep_alive_timeout_s;
//   - the body limit counts the bytes actually read, chunked or not; compressed bodies
//     (Content-Encoding other than identity) are refused with 415 before any body is read;
//   - at max_connections, a new connection evicts the oldest connection that is idle or still
//     in its header; when none is, it is refused with 503.
// Complete requests go to their route: quick ones (health, metrics) answer on the I/O thread, so
// they stay answerable however busy the workers are; the others run on a pool of worker threads
// that write their answers with a deadline per write.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "server/http/message.h"

namespace ridge::server::http {

struct Limits {
  size_t max_body_bytes = 4u << 20;
  size_t max_header_bytes = 16u << 10;
  double header_timeout_s = 10;    // first byte (or accept) to the end of the header
  double request_timeout_s = 30;   // first byte to the end of the body
  double keep_alive_timeout_s = 5;  // idle time between requests on one connection
  double write_timeout_s = 30;     // one response write (or one stream chunk)
  int max_connections = 512;
  int worker_threads = 64;
  int max_pending = 1024;          // complete requests waiting for a worker before 503
};

// Where a route's handler runs.
enum class Dispatch {
  kInline,  // on the I/O thread: must be quick and never block
  kWorker,  // on a worker thread: may block (generation, tokenization)
};

using Handler = std::function<void(const Request&, Exchange&)>;

// Counters of the connection layer (for /metrics and tests).
struct ConnectionStats {
  int64_t open = 0;            // connections now open
  int64_t accepted = 0;        // since start
  int64_t evicted = 0;         // idle / slow-header connections closed to make room
  int64_t refused = 0;         // 503 at max_connections
  int64_t timed_out = 0;       // closed by a header, request or keep-alive deadline
};

class Server {
 public:
  explicit Server(Limits limits);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers a route (exact path). Requests for a known path with another method get 405.
  void route(std::string method, std::string path, Dispatch dispatch, Handler handler);
  // How errors made by the HTTP layer itself look (404, 405, 408, 413, 415, 431, 503 ...).
  void set_error_body(std::function<Response(int status, std::string message)> make);
  // Called once per answered request: the route's path ("unmatched" for unknown paths) and
  // the status (set_outcome's when given). Runs on the I/O or a worker thread.
  void set_observer(std::function<void(std::string_view route, int status)> observe);

  // Binds and listens; a usage error naming host:port when it cannot.
  Status bind(const std::string& host, int port, int backlog);
  int port() const;
  // Serves until stop(); call from one thread after bind().
  void run();
  // Stops accepting and closes every connection; run() returns.
  void stop();

  ConnectionStats stats() const;

 // The implementation (server/http/connection.h), opaque to users of this header.
  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace ridge::server::http
