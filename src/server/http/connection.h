// Internal to the HTTP layer: one client connection and the server state it lives in.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/http/server.h"

namespace ridge::server::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Route {
  std::string method;
  std::string path;
  Dispatch dispatch = Dispatch::kWorker;
  Handler handler;
};

class Connection;

// What the client did with its side of the connection while its request was handled.
enum class PeerState { kOpen, kHalfClosed, kGone };

struct Server::Impl {
  explicit Impl(Limits l) : limits(l) {}
  ~Impl();

  // The route for a method and path; when only the path is known, `allow` lists its methods.
  const Route* find_route(const std::string& method, const std::string& path,
                          std::string& allow) const;
  Response error(int status, std::string message) const;
  void observe(std::string_view route, int status) const;

  void accept();
  // At max_connections: closes the oldest connection that is idle or in its header.
  bool evict_one();
  void add(uint64_t id, const std::shared_ptr<Connection>& c);
  void remove(uint64_t id);
  // Queues a complete request for a worker; false when max_pending are already waiting.
  bool enqueue(std::shared_ptr<Connection> c, const Route* route);
  void worker_loop();

  Limits limits;
  std::vector<Route> routes;
  std::function<Response(int, std::string)> error_body;
  std::function<void(std::string_view, int)> observer;
  std::atomic<bool> stopping{false};
  int port = -1;

  std::atomic<int64_t> n_open{0}, n_accepted{0}, n_evicted{0}, n_refused{0}, n_timed_out{0};
  std::mutex conns_mu;
  std::map<uint64_t, std::weak_ptr<Connection>> conns;  // by accept order: oldest first
  uint64_t next_id = 0;

  struct Job {
    std::shared_ptr<Connection> conn;
    const Route* route;
  };
  std::mutex jobs_mu;
  std::condition_variable jobs_cv;
  std::deque<Job> jobs;
  std::vector<std::thread> workers;

  // Declared last: destroying the io_context destroys pending handlers, and with them
  // connections whose destructors use the members above.
  asio::io_context io{1};
  std::optional<tcp::acceptor> acceptor;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  enum class Phase { kIdle, kHeader, kBody, kHandling, kClosing };

  Connection(Server::Impl& srv, tcp::socket socket, uint64_t id);
  ~Connection();

  void start();
  // Writes a 503 (server full) and closes.
  void refuse(std::string message);
  // Closes now (I/O thread; never while a worker holds the connection).
  void close();
  Phase phase() const { return phase_; }

  // For the worker's exchange.
  int native_fd() const { return fd_; }
  PeerState peer_state() const { return peer_.load(); }
  const Request& request() const { return req_; }
  bool request_keep_alive() const { return keep_alive_; }
  // The worker is done with the request (I/O thread side): next request or close.
  void after_worker(bool keep_alive);

 private:
  void wait_request(bool first);
  void read_header();
  void on_header(beast::error_code ec);
  void read_body();
  void on_body(beast::error_code ec);
  void dispatch();
  // Answers on the I/O thread, then reads the next request (keep_alive) or closes.
  void send_inline(Response res, bool keep_alive, std::string_view route, int outcome);
  void send_error(int status, std::string message, Headers headers, std::string_view route);
  void next_or_close(bool keep_alive);
  void watch_peer();
  // Stops sending, then reads and drops what the client still sends (for a while, up to a
  // size), so that it reads our last response rather than a reset.
  void linger_close();
  void linger_read(size_t total);
  void on_read_error(beast::error_code ec, std::string_view where);

  Server::Impl& srv_;
  beast::tcp_stream stream_;
  int fd_;  // the socket's descriptor, read by the worker without touching the Asio object
  uint64_t id_;
  Phase phase_ = Phase::kIdle;
  beast::flat_buffer buffer_;
  std::optional<beast::http::request_parser<beast::http::string_body>> parser_;
  Clock::time_point request_start_{}, ready_time_{};
  Request req_;
  const Route* route_ = nullptr;
  bool keep_alive_ = true;
  std::atomic<PeerState> peer_{PeerState::kOpen};
  bool watching_ = false;
  std::string out_;       // an inline response being written
  std::vector<char> drain_;  // scratch for linger_close
};

// Status line reason phrases and response head serialization.
std::string response_head(int status, std::string_view content_type, const Headers& headers,
                          std::optional<size_t> content_length, bool keep_alive);

}  // namespace ridge::server::http
