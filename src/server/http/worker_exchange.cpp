// The exchange of a request handled on a worker thread: the worker writes its answer straight
// to the socket (the I/O thread has no operation on it but a wait for the peer's close), each
// write bounded by the write deadline, so a client that stops reading costs one worker for at
// most write_timeout_s.
#include "server/http/worker_exchange.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include <fmt/format.h>

namespace ridge::server::http {

WorkerExchange::WorkerExchange(Connection& conn, const Server::Impl& srv, std::string_view route)
    : conn_(conn), srv_(srv), route_(route), keep_alive_(conn.request_keep_alive()) {}

void WorkerExchange::observe_once(int status) {
  if (observed_) return;
  observed_ = true;
  srv_.observe(route_, status);
}

bool WorkerExchange::write_all(std::string_view data) {
  if (!ok_) return false;
  const int fd = conn_.native_fd();
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(srv_.limits.write_timeout_s));
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return ok_ = false;
    // The client's window is full: wait in short slices, so a stopping server is noticed.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || srv_.stopping) return ok_ = false;
    pollfd p{fd, POLLOUT, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (r < 0 && errno != EINTR) return ok_ = false;
    if (r > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return ok_ = false;
  }
  return true;
}

void WorkerExchange::respond(Response res) {
  if (state_ != State::kNone) return;
  state_ = State::kDone;
  status_ = res.status;
  // Counted before the client can read the answer, so a scrape right after it sees it.
  observe_once(outcome_ != 0 ? outcome_ : res.status);
  std::string out = response_head(res.status, res.content_type, res.headers, res.body.size(),
                                  keep_alive_);
  if (res.body.size() < (64u << 10)) {
    out += res.body;
    write_all(out);
  } else if (write_all(out)) {
    write_all(res.body);
  }
}

bool WorkerExchange::begin_stream(int status, std::string_view content_type,
                                  const Headers& headers) {
  if (state_ != State::kNone) return false;
  state_ = State::kStreaming;
  status_ = status;
  return write_all(response_head(status, content_type, headers, std::nullopt, keep_alive_));
}

bool WorkerExchange::write_chunk(std::string_view data) {
  if (state_ != State::kStreaming) return false;
  if (data.empty()) return ok_;
  std::string frame = fmt::format("{:x}\r\n", data.size());
  frame += data;
  frame += "\r\n";
  return write_all(frame);
}

void WorkerExchange::end_stream() {
  if (state_ != State::kStreaming) return;
  state_ = State::kDone;
  observe_once(outcome());
  write_all("0\r\n\r\n");
}

bool WorkerExchange::client_gone() const {
  return !ok_ || conn_.peer_state() == PeerState::kGone || srv_.stopping;
}

void WorkerExchange::finish() {
  if (state_ == State::kNone && client_gone()) ok_ = false;  // nobody to answer
  if (state_ == State::kNone) respond(srv_.error(500, "the request ended without an answer"));
  if (state_ == State::kStreaming) ok_ = false;  // the body is incomplete: close
  observe_once(outcome());
}

int WorkerExchange::outcome() const {
  if (outcome_ != 0) return outcome_;
  return ok_ ? status_ : 499;
}

bool WorkerExchange::keep_alive() const {
  return ok_ && keep_alive_ && state_ == State::kDone;
}

}  // namespace ridge::server::http
