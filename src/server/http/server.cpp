#include "server/http/server.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include "server/http/connection.h"
#include "server/http/worker_exchange.h"

namespace ridge::server::http {

Server::Impl::~Impl() {
  // Pending handlers hold connections; destroy them while the members they use still exist.
  acceptor.reset();
}

const Route* Server::Impl::find_route(const std::string& method, const std::string& path,
                                      std::string& allow) const {
  allow.clear();
  for (const Route& r : routes) {
    if (r.path != path) continue;
    if (r.method == method) return &r;
    allow += allow.empty() ? r.method : ", " + r.method;
  }
  return nullptr;
}

Response Server::Impl::error(int status, std::string message) const {
  if (error_body) return error_body(status, std::move(message));
  Response r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = std::move(message);
  return r;
}

void Server::Impl::observe(std::string_view route, int status) const {
  if (observer) observer(route.empty() ? std::string_view("unmatched") : route, status);
}

void Server::Impl::add(uint64_t id, const std::shared_ptr<Connection>& c) {
  std::lock_guard lock(conns_mu);
  conns.emplace(id, c);
}

void Server::Impl::remove(uint64_t id) {
  std::lock_guard lock(conns_mu);
  conns.erase(id);
}

bool Server::Impl::evict_one() {
  std::shared_ptr<Connection> victim;
  {
    std::lock_guard lock(conns_mu);
    for (auto& [id, weak] : conns) {
      auto c = weak.lock();
      if (c && (c->phase() == Connection::Phase::kIdle || c->phase() == Connection::Phase::kHeader)) {
        victim = std::move(c);
        break;
      }
    }
  }
  if (!victim) return false;
  n_evicted.fetch_add(1);
  victim->close();
  return true;
}

void Server::Impl::accept() {
  acceptor->async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (stopping || !acceptor->is_open()) return;
    if (ec) {
      // Out of descriptors or memory: try again shortly instead of spinning.
      auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(50));
      timer->async_wait([this, timer](beast::error_code) {
        if (!stopping) accept();
      });
      return;
    }
    beast::error_code opt_ec;
    socket.set_option(tcp::no_delay(true), opt_ec);  // SSE chunks are small and latency-bound
    n_accepted.fetch_add(1);
    const uint64_t id = next_id++;
    auto c = std::make_shared<Connection>(*this, std::move(socket), id);
    if (n_open.load() > limits.max_connections && !evict_one()) {
      n_refused.fetch_add(1);
      c->refuse(fmt::format("the server has {} connections open, its limit; retry later",
                            limits.max_connections));
    } else {
      add(id, c);
      c->start();
    }
    accept();
  });
}

bool Server::Impl::enqueue(std::shared_ptr<Connection> c, const Route* route) {
  {
    std::lock_guard lock(jobs_mu);
    if (jobs.size() >= static_cast<size_t>(limits.max_pending)) return false;
    jobs.push_back({std::move(c), route});
  }
  jobs_cv.notify_one();
  return true;
}

void Server::Impl::worker_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(jobs_mu);
      jobs_cv.wait(lock, [&] { return stopping.load() || !jobs.empty(); });
      if (stopping) return;
      job = std::move(jobs.front());
      jobs.pop_front();
    }
    WorkerExchange ex(*job.conn, *this, job.route->path);
    try {
      job.route->handler(job.conn->request(), ex);
    } catch (const std::exception& e) {
      ex.respond(error(500, e.what()));
    }
    ex.finish();
    asio::post(io, [c = std::move(job.conn), keep = ex.keep_alive()] { c->after_worker(keep); });
  }
}

Server::Server(Limits limits) : impl_(std::make_shared<Impl>(limits)) {}

Server::~Server() = default;

void Server::route(std::string method, std::string path, Dispatch dispatch, Handler handler) {
  impl_->routes.push_back({std::move(method), std::move(path), dispatch, std::move(handler)});
}

void Server::set_error_body(std::function<Response(int, std::string)> make) {
  impl_->error_body = std::move(make);
}

void Server::set_observer(std::function<void(std::string_view, int)> observe) {
  impl_->observer = std::move(observe);
}

Status Server::bind(const std::string& host, int port, int backlog) {
  Impl& s = *impl_;
  beast::error_code ec;
  tcp::resolver resolver(s.io);
  const auto results = resolver.resolve(host, std::to_string(port),
                                        tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return usage_error("serve: cannot resolve host '{}': {}", host, ec.message());
  }
  const tcp::endpoint ep = results.begin()->endpoint();
  s.acceptor.emplace(s.io);
  s.acceptor->open(ep.protocol(), ec);
  if (!ec) s.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor->bind(ep, ec);
  if (!ec) s.acceptor->listen(backlog, ec);
  if (ec) {
    s.acceptor.reset();
    return usage_error("serve: cannot listen on {}:{} ({})", host, port, ec.message());
  }
  s.port = s.acceptor->local_endpoint().port();
  return ok_status();
}

int Server::port() const { return impl_->port; }

void Server::run() {
  Impl& s = *impl_;
  if (!s.acceptor) return;
  for (int i = 0; i < s.limits.worker_threads; ++i) s.workers.emplace_back([&s] { s.worker_loop(); });
  s.accept();
  s.io.run();
  s.stopping = true;
  s.jobs_cv.notify_all();
  for (auto& w : s.workers) w.join();
  s.workers.clear();
}

void Server::stop() {
  Impl& s = *impl_;
  s.stopping = true;
  s.jobs_cv.notify_all();
  asio::post(s.io, [&s] {
    beast::error_code ec;
    if (s.acceptor) s.acceptor->close(ec);
    std::vector<std::shared_ptr<Connection>> open;
    {
      std::lock_guard lock(s.conns_mu);
      for (auto& [id, weak] : s.conns) {
        if (auto c = weak.lock()) open.push_back(std::move(c));
      }
    }
    // A connection a worker holds closes when the worker lets go of it.
    for (auto& c : open) {
      if (c->phase() != Connection::Phase::kHandling) c->close();
    }
    s.io.stop();
  });
}

ConnectionStats Server::stats() const {
  const Impl& s = *impl_;
  return {s.n_open.load(), s.n_accepted.load(), s.n_evicted.load(), s.n_refused.load(),
          s.n_timed_out.load()};
}

}  // namespace ridge::server::http
