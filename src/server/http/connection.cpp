#include "server/http/connection.h"

#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include <cerrno>

#include <fmt/format.h>

namespace ridge::server::http {

namespace bhttp = beast::http;

namespace {

// A client that closes its sending side this soon after its request arrived has half-closed
// (it still reads the answer); a close later than this means it left.
constexpr auto kHalfCloseGrace = std::chrono::milliseconds(100);
// How long a closing connection may keep sending bytes we discard (so that the client reads
// our error response instead of a reset), and how many.
constexpr auto kLingerTime = std::chrono::seconds(1);
constexpr size_t kLingerBytes = 256u << 10;

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// An exchange for handlers that run on the I/O thread: it keeps the one response.
class InlineExchange final : public Exchange {
 public:
  void respond(Response res) override { res_ = std::move(res), answered_ = true; }
  bool begin_stream(int, std::string_view, const Headers&) override { return false; }
  bool write_chunk(std::string_view) override { return false; }
  void end_stream() override {}
  bool client_gone() const override { return false; }
  void set_outcome(int status) override { outcome_ = status; }

  Response res_;
  bool answered_ = false;
  int outcome_ = 0;
};

}  // namespace

Connection::Connection(Server::Impl& srv, tcp::socket socket, uint64_t id)
    : srv_(srv), stream_(std::move(socket)), fd_(stream_.socket().native_handle()), id_(id) {
  srv_.n_open.fetch_add(1);
  request_start_ = Clock::now();
}

Connection::~Connection() {
  srv_.remove(id_);
  srv_.n_open.fetch_sub(1);
}

void Connection::start() { wait_request(/*first=*/true); }

void Connection::wait_request(bool first) {
  phase_ = Phase::kIdle;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(srv_.limits.max_header_bytes));
  parser_->body_limit(srv_.limits.max_body_bytes);
  req_ = Request{};
  route_ = nullptr;
  if (!first) request_start_ = Clock::now();
  if (buffer_.size() > 0) return read_header();  // a pipelined request is already here
  // A new connection has header_timeout_s for its whole header, counted from accept; a
  // kept-alive one may stay idle keep_alive_timeout_s, then has header_timeout_s from its
  // first byte.
  if (first) {
    stream_.expires_at(request_start_ + seconds(srv_.limits.header_timeout_s));
  } else {
    stream_.expires_after(seconds(srv_.limits.keep_alive_timeout_s));
  }
  bhttp::async_read_some(stream_, buffer_, *parser_,
                         [self = shared_from_this(), first](beast::error_code ec, size_t) {
                           if (ec) return self->on_read_error(ec, "header");
                           if (!first) self->request_start_ = Clock::now();
                           if (self->parser_->is_header_done()) return self->on_header({});
                           self->read_header();
                         });
}

void Connection::read_header() {
  phase_ = Phase::kHeader;
  stream_.expires_at(request_start_ + seconds(srv_.limits.header_timeout_s));
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           [self = shared_from_this()](beast::error_code ec, size_t) {
                             self->on_header(ec);
                           });
}

void Connection::on_header(beast::error_code ec) {
  if (ec) return on_read_error(ec, "header");
  const auto& h = parser_->get();
  req_.method = std::string(h.method_string());
  const std::string_view target = h.target();
  const size_t q = target.find('?');
  req_.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req_.query = std::string(target.substr(q + 1));
  for (const auto& field : h) {
    req_.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  keep_alive_ = h.keep_alive();
  std::string allow;
  route_ = srv_.find_route(req_.method, req_.path, allow);
  if (!route_) {
    if (allow.empty()) {
      return send_error(404, fmt::format("no route for {} {}", req_.method, req_.path), {}, "");
    }
    return send_error(405, fmt::format("{} does not accept {} (allowed: {})", req_.path,
                                       req_.method, allow),
                      {{"Allow", allow}}, req_.path);
  }
  const std::string encoding = req_.header("Content-Encoding");
  if (!encoding.empty() && !iequals(encoding, "identity")) {
    return send_error(415, fmt::format("compressed request bodies (Content-Encoding: {}) are "
                                       "not accepted; send the body uncompressed", encoding),
                      {}, route_->path);
  }
  const bool has_body = !parser_->is_done();
  if (has_body && iequals(req_.header("Expect"), "100-continue")) {
    out_ = "HTTP/1.1 100 Continue\r\n\r\n";
    stream_.expires_after(seconds(srv_.limits.write_timeout_s));
    return asio::async_write(stream_, asio::buffer(out_),
                             [self = shared_from_this()](beast::error_code wec, size_t) {
                               if (wec) return self->close();
                               self->read_body();
                             });
  }
  read_body();
}

void Connection::read_body() {
  phase_ = Phase::kBody;
  if (parser_->is_done()) return on_body({});
  stream_.expires_at(request_start_ + seconds(srv_.limits.request_timeout_s));
  bhttp::async_read(stream_, buffer_, *parser_,
                    [self = shared_from_this()](beast::error_code ec, size_t) {
                      self->on_body(ec);
                    });
}

void Connection::on_body(beast::error_code ec) {
  if (ec) return on_read_error(ec, "body");
  req_.body = std::move(parser_->get().body());
  parser_.reset();
  stream_.expires_never();
  ready_time_ = Clock::now();
  dispatch();
}

void Connection::dispatch() {
  if (route_->dispatch == Dispatch::kInline) {
    InlineExchange ex;
    route_->handler(req_, ex);
    if (!ex.answered_) ex.res_ = srv_.error(500, "the route gave no answer");
    const int status = ex.res_.status;
    return send_inline(std::move(ex.res_), keep_alive_, route_->path,
                       ex.outcome_ ? ex.outcome_ : status);
  }
  phase_ = Phase::kHandling;
  if (!srv_.enqueue(shared_from_this(), route_)) {
    phase_ = Phase::kBody;
    Response r = srv_.error(503, "the server is busy: too many requests are waiting for a worker");
    r.headers.emplace_back("Retry-After", "1");
    return send_inline(std::move(r), false, route_->path, 503);
  }
  watch_peer();
}

void Connection::watch_peer() {
  watching_ = true;
  stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
    if (ec || !self->watching_) return;
    char c = 0;
    const ssize_t n = ::recv(self->native_fd(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return self->watch_peer();
    }
    self->watching_ = false;
    if (n > 0) return;  // a pipelined request: read after this one is answered
    const bool early = Clock::now() - self->ready_time_ < kHalfCloseGrace;
    self->peer_ = (n == 0 && early) ? PeerState::kHalfClosed : PeerState::kGone;
  });
}

void Connection::after_worker(bool keep_alive) {
  if (watching_) {
    watching_ = false;
    beast::error_code ec;
    stream_.socket().cancel(ec);
  }
  if (srv_.stopping) return close();
  next_or_close(keep_alive && peer_ == PeerState::kOpen);
}

void Connection::send_inline(Response res, bool keep_alive, std::string_view route, int outcome) {
  srv_.observe(route, outcome);
  out_ = response_head(res.status, res.content_type, res.headers, res.body.size(), keep_alive);
  out_ += res.body;
  phase_ = keep_alive ? Phase::kHandling : Phase::kClosing;
  stream_.expires_after(seconds(srv_.limits.write_timeout_s));
  asio::async_write(stream_, asio::buffer(out_),
                    [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                      self->out_.clear();
                      self->out_.shrink_to_fit();
                      if (ec) return self->close();
                      self->next_or_close(keep_alive);
                    });
}

void Connection::send_error(int status, std::string message, Headers headers,
                            std::string_view route) {
  Response r = srv_.error(status, std::move(message));
  for (auto& h : headers) r.headers.push_back(std::move(h));
  send_inline(std::move(r), /*keep_alive=*/false, route, status);
}

void Connection::refuse(std::string message) {
  phase_ = Phase::kClosing;
  Response r = srv_.error(503, std::move(message));
  r.headers.emplace_back("Retry-After", "1");
  send_inline(std::move(r), false, "", 503);
}

void Connection::next_or_close(bool keep_alive) {
  if (keep_alive && !srv_.stopping) return wait_request(/*first=*/false);
  linger_close();
}

void Connection::linger_close() {
  phase_ = Phase::kClosing;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close();
  drain_.resize(16u << 10);
  stream_.expires_after(kLingerTime);
  linger_read(0);
}

void Connection::linger_read(size_t total) {
  stream_.async_read_some(asio::buffer(drain_), [self = shared_from_this(), total](
                                                    beast::error_code ec, size_t n) {
    if (ec || total + n > kLingerBytes) return self->close();
    self->linger_read(total + n);
  });
}

void Connection::close() {
  phase_ = Phase::kClosing;
  watching_ = false;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

void Connection::on_read_error(beast::error_code ec, std::string_view where) {
  if (ec == asio::error::operation_aborted || phase_ == Phase::kClosing) return;
  if (ec == beast::error::timeout) {
    // tcp_stream has closed the socket already; a connection that never sent a byte just ends.
    srv_.n_timed_out.fetch_add(1);
    phase_ = Phase::kClosing;
    return;
  }
  if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
      ec == asio::error::connection_reset || ec == bhttp::error::partial_message) {
    return close();
  }
  const std::string_view route = route_ ? std::string_view(route_->path) : std::string_view();
  if (ec == bhttp::error::body_limit) {
    return send_error(413, fmt::format("request body exceeds the server's limit of {} bytes",
                                       srv_.limits.max_body_bytes), {}, route);
  }
  if (ec == bhttp::error::header_limit) {
    return send_error(431, fmt::format("request header exceeds the server's limit of {} bytes",
                                       srv_.limits.max_header_bytes), {}, route);
  }
  send_error(400, fmt::format("malformed HTTP request {}: {}", where, ec.message()), {}, route);
}

}  // namespace ridge::server::http
