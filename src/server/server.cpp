#include "server/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

#include "base/timer.h"
#include "server/api_error.h"
#include "server/openai_response.h"

namespace ridge::server {

using nlohmann::json;

void send_error(httplib::Response& res, const ApiError& err) {
  res.status = err.status;
  if (err.status == 429) res.set_header("Retry-After", "1");
  if (err.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(dump_json(err.to_json()), "application/json");
}

namespace {

// Constant-time comparison: the time taken does not reveal how much of the key matched.
bool same_key(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (b.empty() ? 0 : b[i % b.size()]));
  }
  return diff == 0;
}

}  // namespace

Server::Server(ServerOptions opts) : opts_(std::move(opts)), http_(std::make_unique<httplib::Server>()) {
  const int n_threads = opts_.http_threads;
  http_->new_task_queue = [n_threads] { return new httplib::ThreadPool(static_cast<size_t>(n_threads)); };
  http_->set_payload_max_length(opts_.max_body_bytes);
  http_->set_read_timeout(30, 0);
  http_->set_write_timeout(30, 0);
  http_->set_keep_alive_timeout(5);
  http_->set_tcp_nodelay(true);  // SSE chunks are small and latency-sensitive
  http_->set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd_ = static_cast<int>(sock);
  });
  install_routes();
}

Server::~Server() = default;

Status Server::bind() {
  if (opts_.port == 0) {
    port_ = http_->bind_to_any_port(opts_.host);
  } else {
    port_ = http_->bind_to_port(opts_.host, opts_.port) ? opts_.port : -1;
  }
  if (port_ < 0) {
    return usage_error("serve: cannot listen on {}:{} (address in use or not local?)", opts_.host,
                       opts_.port);
  }
  // httplib listens with a backlog of 5, compiled into Debian's library: a burst of more
  // simultaneous connections than that has the rest dropped until their SYN is resent a second
  // later. Linux takes a second listen() on a listening socket as a new backlog.
  if (listen_fd_ >= 0 && ::listen(listen_fd_, opts_.listen_backlog) != 0) {
    return usage_error("serve: cannot set the listen backlog to {}", opts_.listen_backlog);
  }
  return ok_status();
}

void Server::run() { http_->listen_after_bind(); }

void Server::stop() { http_->stop(); }

void Server::set_model(ModelContext ctx) {
  std::lock_guard lock(model_mu_);
  model_ = std::make_shared<const ModelContext>(std::move(ctx));
}

std::shared_ptr<const ModelContext> Server::model() const {
  std::lock_guard lock(model_mu_);
  return model_;
}

bool Server::drain(double timeout_s) {
  draining_ = true;
  const double end = now_seconds() + timeout_s;
  while (n_requests_.load() > 0 && now_seconds() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return n_requests_.load() == 0;
}

bool Server::authorized(const httplib::Request& req, httplib::Response& res) {
  if (opts_.api_key.empty()) return true;
  const std::string h = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (h.size() > kBearer.size() && std::string_view(h).substr(0, kBearer.size()) == kBearer &&
      same_key(h.substr(kBearer.size()), opts_.api_key)) {
    return true;
  }
  send_error(res, unauthorized(h.empty() ? "missing API key: send 'Authorization: Bearer <key>'"
                                         : "incorrect API key"));
  return false;
}

EngineSnapshot Server::snapshot() const {
  EngineSnapshot s;
  auto m = model();
  if (!m) return s;
  const engine::EngineStats e = m->engine->stats();
  s.n_waiting = e.n_waiting;
  s.n_running = e.n_running;
  s.kv_blocks_total = e.kv_blocks_total;
  s.kv_blocks_free = e.kv_blocks_free;
  s.kv_blocks_used = e.kv_blocks_used;
  s.prefix_cache_hit_rate = e.prefix_cache_hit_rate;
  s.preemptions = e.n_preemptions;
  s.bytes_moved = e.bytes_moved;
  s.busy_seconds = e.busy_seconds;
  s.steps = e.n_steps;
  s.probed_gbs = m->probed_gbs;
  // Live bandwidth: bytes over busy time since the previous scrape (kept when idle).
  std::lock_guard lock(gbs_mu_);
  if (e.busy_seconds > last_busy_) {
    live_gbs_ = (e.bytes_moved - last_bytes_) / (e.busy_seconds - last_busy_) / 1e9;
    last_bytes_ = e.bytes_moved;
    last_busy_ = e.busy_seconds;
  }
  s.live_gbs = live_gbs_;
  return s;
}

void Server::install_routes() {
  using httplib::Request;
  using httplib::Response;
  http_->Get("/health", [this](const Request&, Response& res) {
    const bool ready = model() != nullptr && !draining_;
    res.status = ready ? 200 : 503;
    res.set_content(ready ? R"({"status":"ok"})"
                          : (draining_ ? R"({"status":"draining"})" : R"({"status":"loading"})"),
                    "application/json");
    metrics_.count_request("/health", res.status);
  });
  http_->Get("/metrics", [this](const Request&, Response& res) {
    metrics_.set_in_flight(n_requests_.load());
    res.set_content(metrics_.render(snapshot(), model() != nullptr && !draining_),
                    "text/plain; version=0.0.4");
  });
  http_->Get("/v1/models", [this](const Request& req, Response& res) { handle_models(req, res); });
  http_->Post("/v1/chat/completions", [this](const Request& req, Response& res) {
    handle_generation(req, res, Endpoint::kChat);
  });
  http_->Post("/v1/completions", [this](const Request& req, Response& res) {
    handle_generation(req, res, Endpoint::kCompletion);
  });
  http_->Post("/tokenize", [this](const Request& req, Response& res) { handle_tokenize(req, res); });
  http_->Post("/detokenize",
              [this](const Request& req, Response& res) { handle_detokenize(req, res); });
  // Errors cpp-httplib produces itself (413 body too large, 404 unknown path, 400 bad request)
  // get an OpenAI-style body too.
  http_->set_error_handler([this](const Request& req, Response& res) {
    if (!res.body.empty()) return;
    ApiError e;
    e.status = res.status;
    e.type = res.status >= 500 ? "server_error" : "invalid_request_error";
    if (res.status == 413) {
      e = payload_too_large(fmt::format("request body exceeds the server's limit of {} bytes",
                                        opts_.max_body_bytes));
    } else if (res.status == 404) {
      e = not_found(fmt::format("no route for {} {}", req.method, req.path), "not_found");
    } else {
      e.message = fmt::format("HTTP error {}", res.status);
    }
    metrics_.count_request(req.path, res.status);
    send_error(res, e);
  });
  http_->set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& ex) {
      what = ex.what();
    } catch (...) {
    }
    send_error(res, server_error(what));
  });
}

}  // namespace ridge::server
