// `ridge serve`: an OpenAI-compatible HTTP server in front of one Engine.
//
// The HTTP layer (server/http/: Boost.Beast on Asio, built for hostile clients) hands complete
// requests to the routes here. Routes only talk to the engine through its thread-safe request
// queue (Engine::add_request / abort) and the per-request output callback, which pushes events
// into a channel and returns at once: no HTTP thread ever blocks the engine thread, and no engine
// event waits for a slow client.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "chat/conversation.h"
#include "chat/output_format.h"
#include "engine/engine.h"
#include "server/api_error.h"
#include "server/http/server.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace ridge::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;               // 0: any free port (see Server::port())
  std::string api_key;           // "": no authentication
  int32_t max_queue = 256;       // sequences allowed to wait beyond the engine's max_seqs
  double request_timeout_s = 600;  // per request, from arrival; 0: none
  int listen_backlog = 1024;     // connections the kernel queues before accept
  http::Limits http;             // body and header sizes, read/write deadlines, connections
  RequestLimits limits;
  // Most tokens /tokenize returns and /detokenize takes (0: max(max_model_len, 131072)).
  int64_t max_tokenize_tokens = 0;
};

// Everything about the loaded model the server needs; set once it is ready.
struct ModelContext {
  engine::Engine* engine = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  std::string model_id;          // the name clients use in "model"
  int32_t max_model_len = 0;
  int32_t max_seqs = 1;
  int64_t created = 0;           // unix seconds (for /v1/models)
  double probed_gbs = 0;         // ridge probe's read bandwidth, 0 when unknown
  // Renders a conversation to prompt text with the model's chat template (usage errors: 400).
  std::function<Result<chat::RenderedPrompt>(const chat::Conversation&)> render_chat;
  chat::FormatInfo output_format;  // how the model writes reasoning and tool calls
  bool separate_reasoning = true;  // false: --reasoning-format none (reasoning stays in content)
  bool embeddings = false;         // an embedding engine: /v1/embeddings only
  int32_t n_embd = 0;              // width of its vectors
};

class GenerationRun;
class RunMetrics;

class Server {
 public:
  explicit Server(ServerOptions opts);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket (usage error naming host:port when it cannot).
  Status bind();
  int port() const { return http_.port(); }
  // Serves until stop(); call from one thread after bind().
  void run();
  // From now on /health is ready and generation requests are accepted. The engine must outlive
  // the server's run().
  void set_model(ModelContext ctx);
  // Refuses new generation requests (503) and waits up to timeout_s for in-flight ones. Returns
  // true when every request finished in time.
  bool drain(double timeout_s);
  // Stops listening; run() returns.
  void stop();

  // For tests and the drain logic.
  int64_t n_in_flight() const { return n_requests_.load(); }
  const Metrics& metrics() const { return metrics_; }
  http::ConnectionStats connection_stats() const { return http_.stats(); }

 private:
  void install_routes();
  // An error for a request without the right key; nullopt when it may pass.
  std::optional<ApiError> check_key(const http::Request& req) const;
  std::shared_ptr<const ModelContext> model() const;
  void handle_generation(const http::Request& req, http::Exchange& ex, Endpoint endpoint);
  void stream_generation(GenerationRun& run, http::Exchange& ex, double deadline,
                         RunMetrics& run_metrics);
  void handle_tokenize(const http::Request& req, http::Exchange& ex);
  void handle_apply_template(const http::Request& req, http::Exchange& ex);
  void handle_embeddings(const http::Request& req, http::Exchange& ex);
  // Takes n places of the queue (429 when --max-seqs + --max-queue would be exceeded).
  std::optional<ApiError> reserve_seqs(const ModelContext& m, int64_t n);
  // Logs an accepted-but-ignored request field, once per field name.
  void warn_ignored_field(const std::string& field);
  void handle_detokenize(const http::Request& req, http::Exchange& ex);
  void handle_models(const http::Request& req, http::Exchange& ex);
  int64_t max_tokenize_tokens(const ModelContext& m) const;
  EngineSnapshot snapshot() const;

  ServerOptions opts_;
  mutable std::mutex model_mu_;
  std::shared_ptr<const ModelContext> model_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> n_requests_{0};  // generation requests being served
  std::atomic<int64_t> n_seqs_{0};      // their sequences (choices) not yet finished
  Metrics metrics_;
  std::mutex warned_mu_;
  std::set<std::string> warned_fields_;
  mutable std::mutex gbs_mu_;           // live bandwidth: delta since the previous scrape
  mutable double last_bytes_ = 0, last_busy_ = 0, live_gbs_ = 0;
  http::Server http_;  // last: its threads use the members above
};

// `err` as a response: its status, the OpenAI error object, Retry-After for 429 and 503.
http::Response error_response(const ApiError& err);

}  // namespace ridge::server
