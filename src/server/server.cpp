#include "server/server.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

#include "base/log.h"
#include "base/timer.h"
#include "server/api_error.h"
#include "server/openai_response.h"

namespace ridge::server {

using nlohmann::json;

http::Response error_response(const ApiError& err) {
  http::Response res;
  res.status = err.status;
  if (err.status == 429 || err.status == 503) res.headers.emplace_back("Retry-After", "1");
  if (err.status == 401) res.headers.emplace_back("WWW-Authenticate", "Bearer");
  res.body = dump_json(err.to_json());
  return res;
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

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

http::Response json_response(const json& body) {
  http::Response res;
  res.body = dump_json(body);
  return res;
}

}  // namespace

Server::Server(ServerOptions opts) : opts_(std::move(opts)), http_(opts_.http) {
  http_.set_error_body([](int status, std::string message) {
    return error_response(http_error(status, std::move(message)));
  });
  http_.set_observer([this](std::string_view route, int status) {
    metrics_.count_request(route, status);
  });
  install_routes();
}

Server::~Server() = default;

Status Server::bind() { return http_.bind(opts_.host, opts_.port, opts_.listen_backlog); }

void Server::run() { http_.run(); }

void Server::stop() { http_.stop(); }

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

std::optional<ApiError> Server::check_key(const http::Request& req) const {
  if (opts_.api_key.empty()) return std::nullopt;
  const std::string h = req.header("Authorization");
  // RFC 7235: the scheme name is case-insensitive.
  const std::string_view v = trim(h);
  const size_t sp = v.find(' ');
  if (sp != std::string_view::npos && http::iequals(v.substr(0, sp), "bearer") &&
      same_key(std::string(trim(v.substr(sp + 1))), opts_.api_key)) {
    return std::nullopt;
  }
  return unauthorized(h.empty() ? "missing API key: send 'Authorization: Bearer <key>'"
                                : "incorrect API key");
}

std::optional<ApiError> Server::reserve_seqs(const ModelContext& m, int64_t n) {
  // Check and reserve in one step, so two requests arriving together cannot both take the last
  // places.
  const int64_t capacity = m.max_seqs + opts_.max_queue;
  int64_t held = n_seqs_.load();
  do {
    if (held + n > capacity) {
      return too_many_requests(fmt::format(
          "the server's queue is full ({} sequences running or waiting); retry later", held));
    }
  } while (!n_seqs_.compare_exchange_weak(held, held + n));
  return std::nullopt;
}

void Server::warn_ignored_field(const std::string& field) {
  std::lock_guard lock(warned_mu_);
  if (!warned_fields_.insert(field).second) return;
  log_warn("serve: request field '{}' is accepted and ignored (logged once)", field);
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
  s.kv_window_blocks_total = e.kv_window_blocks_total;
  s.kv_window_blocks_used = e.kv_window_blocks_used;
  s.prefix_cache_hit_rate = e.prefix_cache_hit_rate;
  s.preemptions = e.n_preemptions;
  s.draft_tokens = e.n_draft_tokens;
  s.accepted_tokens = e.n_accepted_tokens;
  s.state_snapshots = e.n_state_snapshots;
  s.state_hits = e.n_state_hits;
  s.bytes_moved = e.bytes_moved;
  s.busy_seconds = e.busy_seconds;
  s.steps = e.n_steps;
  s.probed_gbs = m->probed_gbs;
  s.model_name = m->model_id;
  s.block_size = m->engine->budget().block_size;
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
  using http::Dispatch;
  using http::Exchange;
  using http::Request;
  // /health and /metrics answer on the HTTP layer's I/O thread: however busy the workers are,
  // an orchestrator's probe gets its answer.
  http_.route("GET", "/health", Dispatch::kInline, [this](const Request&, Exchange& ex) {
    const bool ready = model() != nullptr && !draining_;
    http::Response res;
    res.status = ready ? 200 : 503;
    res.body = ready ? R"({"status":"ok"})"
                     : (draining_ ? R"({"status":"draining"})" : R"({"status":"loading"})");
    ex.respond(std::move(res));
  });
  http_.route("GET", "/metrics", Dispatch::kInline, [this](const Request&, Exchange& ex) {
    metrics_.set_in_flight(n_requests_.load());
    metrics_.set_connections(http_.stats());
    http::Response res;
    res.content_type = "text/plain; version=0.0.4";
    res.body = metrics_.render(snapshot(), model() != nullptr && !draining_);
    ex.respond(std::move(res));
  });
  http_.route("GET", "/v1/models", Dispatch::kInline,
              [this](const Request& req, Exchange& ex) { handle_models(req, ex); });
  http_.route("POST", "/v1/chat/completions", Dispatch::kWorker,
              [this](const Request& req, Exchange& ex) {
                handle_generation(req, ex, Endpoint::kChat);
              });
  http_.route("POST", "/v1/completions", Dispatch::kWorker,
              [this](const Request& req, Exchange& ex) {
                handle_generation(req, ex, Endpoint::kCompletion);
              });
  http_.route("POST", "/tokenize", Dispatch::kWorker,
              [this](const Request& req, Exchange& ex) { handle_tokenize(req, ex); });
  http_.route("POST", "/v1/embeddings", Dispatch::kWorker,
              [this](const Request& req, Exchange& ex) { handle_embeddings(req, ex); });
  http_.route("POST", "/apply-template", Dispatch::kWorker,
              [this](const Request& req, Exchange& ex) { handle_apply_template(req, ex); });
  http_.route("POST", "/detokenize", Dispatch::kWorker,
              [this](const Request& req, Exchange& ex) { handle_detokenize(req, ex); });
}

void Server::handle_models(const http::Request& req, http::Exchange& ex) {
  if (auto e = check_key(req)) return ex.respond(error_response(*e));
  auto m = model();
  json data = json::array();
  if (m) {
    data.push_back({{"id", m->model_id},
                    {"object", "model"},
                    {"created", m->created},
                    {"owned_by", "ridge"},
                    {"max_model_len", m->max_model_len}});
  }
  ex.respond(json_response({{"object", "list"}, {"data", std::move(data)}}));
}

}  // namespace ridge::server
