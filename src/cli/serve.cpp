// `ridge serve`: load a model, start the engine thread and the OpenAI-compatible HTTP server.
// /health answers 503 until the model is loaded. SIGTERM/SIGINT drain: new requests get 503,
// in-flight ones finish (bounded by --drain-timeout, then aborted), exit 0.
#include <fmt/format.h>

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <ctime>
#include <filesystem>
#include <pthread.h>
#include <thread>

#include "analysis/probe.h"
#include "cli/chat_options.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/engine_spec.h"
#include "engine/engine.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "server/server.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {

namespace {

struct ServeArgs {
  std::string model_path;
  std::string model_name;
  std::string isa;
  std::string device = "cpu";
  std::string kv_type = "f16";
  ChatTemplateArgs chat;
  std::string api_key_file;
  bool embeddings = false;
  std::string pooling;
  double kv_mib = 0;
  double drain_timeout_s = 30;
  gguf::Backing backing = gguf::Backing::kHugePages;
  engine::EngineOptions engine;
  EngineSpecArgs spec;
  server::ServerOptions server;
};

void add_flags(CLI::App& app, ServeArgs& a) {
  app.add_option("-m,--model", a.model_path, "GGUF model file")->required();
  app.add_option("--host", a.server.host, "address to listen on (loopback by default)")->capture_default_str();
  app.add_option("--port", a.server.port, "TCP port (0: any free port, printed at start)")->capture_default_str();
  app.add_option("--api-key", a.server.api_key,
                 "require 'Authorization: Bearer KEY' (visible in ps: prefer RIDGE_API_KEY or --api-key-file)");
  app.add_option("--api-key-file", a.api_key_file, "read the API key from the first line of this file");
  add_chat_template_flags(app, a.chat);
  app.add_flag("--embeddings", a.embeddings,
               "serve /v1/embeddings with an embedding model instead of generating");
  app.add_option("--pooling", a.pooling, "embeddings: mean, cls or last (default: the model's "
                                         "pooling_type)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  app.add_option("--model-name", a.model_name, "model id clients use (default: file name stem)");
  app.add_option("--max-model-len", a.engine.max_model_len, "prompt + completion tokens per sequence (0: min(training context, 4096))");
  app.add_option("--max-seqs", a.engine.max_seqs, "running sequences at most")->capture_default_str();
  app.add_option("--max-batched-tokens", a.engine.max_batched_tokens, "tokens per engine step")->capture_default_str();
  app.add_option("--max-prefill-with-decodes", a.engine.max_prefill_with_decodes,
                 "prompt tokens per step while others decode (0: no cap)")->capture_default_str();
  app.add_option("--kv-mem", a.kv_mib, "KV cache size in MiB (0: automatic)");
  app.add_option("--kv-type", a.kv_type, "KV cache type: f16, bf16, q8_0 (head_dim % 32 == 0) or f32")->capture_default_str();
  app.add_option("--block-size", a.engine.block_size, "KV block size in tokens")->capture_default_str();
  app.add_flag("--no-prefix-caching", [&a](int64_t) { a.engine.prefix_caching = false; }, "disable prefix caching");
  app.add_flag("--swa-full", a.engine.swa_full,
               "keep every position's K/V in the sliding-window layers too (default: only their window)");
  app.add_option("--state-cache", a.engine.state_cache,
                 "hybrid models: recurrent states kept for the prefix cache (-1: as many as --max-seqs; 0: none, prefix caching off)")
      ->check(CLI::Range(-1, 1 << 16))->capture_default_str();
  app.add_option("--state-snapshot-interval", a.engine.state_snapshot_interval,
                 "hybrid models: also keep the state every N prompt tokens for the prefix cache (whole blocks; 0: off)")
      ->check(CLI::Range(0, 1 << 24))->capture_default_str();
  app.add_option("-t,--threads", a.engine.n_threads, "engine compute threads")->capture_default_str();
  add_engine_spec_flags(app, a.spec, a.engine);
  app.add_option("--isa", a.isa, "force kernels: ref, avx2, avx512");
  add_device_option(app, a.device);
  add_mmap_flag(app, a.backing);
  app.add_option("--max-queue", a.server.max_queue, "sequences that may wait beyond --max-seqs before 429")->capture_default_str();
  app.add_option("--max-body", a.server.http.max_body_bytes, "largest request body in bytes, as read (413 beyond)")->capture_default_str();
  app.add_option("--request-timeout", a.server.request_timeout_s, "seconds per request, 0: none")->capture_default_str();
  app.add_option("--drain-timeout", a.drain_timeout_s, "seconds SIGTERM waits for in-flight requests")->capture_default_str();
  app.add_option("--http-threads", a.server.http.worker_threads, "requests handled at once (worker threads)")->capture_default_str();
  app.add_option("--max-connections", a.server.http.max_connections, "open client connections at most")->capture_default_str();
  app.add_option("--header-timeout", a.server.http.header_timeout_s, "seconds a client has to send a request's header")->capture_default_str();
  app.add_option("--read-timeout", a.server.http.request_timeout_s, "seconds a client has to send a whole request")->capture_default_str();
  app.add_option("--max-n", a.server.limits.max_n, "most choices (n) per request")->capture_default_str();
}

// --pooling, else the model's pooling_type (an embedding model says how it pools).
Result<model::Pooling> resolve_pooling(const std::string& flag, const model::ModelConfig& cfg) {
  if (flag == "mean") return model::Pooling::kMean;
  if (flag == "cls") return model::Pooling::kCls;
  if (flag == "last") return model::Pooling::kLast;
  if (cfg.pooling == model::Pooling::kNone) {
    return Status::usage("--embeddings: the model has no pooling_type in its metadata (not an "
                         "embedding model?); choose one with --pooling mean|cls|last");
  }
  if (cfg.pooling == model::Pooling::kRank) {
    return Status::usage("--embeddings: rank pooling (a reranker) is not supported yet");
  }
  return cfg.pooling;
}

// The key from --api-key, else --api-key-file, else RIDGE_API_KEY ("" when none is given).
Status resolve_api_key(ServeArgs& a) {
  if (!a.server.api_key.empty() && !a.api_key_file.empty()) {
    return usage_error("serve: give --api-key or --api-key-file, not both");
  }
  if (!a.api_key_file.empty()) {
    std::ifstream in(a.api_key_file);
    if (!in) return usage_error("serve: --api-key-file {}: cannot read it", a.api_key_file);
    std::getline(in, a.server.api_key);
    while (!a.server.api_key.empty() && std::isspace(static_cast<unsigned char>(a.server.api_key.back()))) {
      a.server.api_key.pop_back();
    }
    if (a.server.api_key.empty()) return usage_error("serve: --api-key-file {}: the first line is empty", a.api_key_file);
  } else if (a.server.api_key.empty()) {
    if (const char* env = std::getenv("RIDGE_API_KEY")) a.server.api_key = env;
  }
  return ok_status();
}

Status check_http_limits(const server::http::Limits& l) {
  if (l.max_body_bytes < 1) return usage_error("serve: --max-body must be at least 1 byte");
  if (l.worker_threads < 1 || l.worker_threads > 4096) {
    return usage_error("serve: --http-threads {} is outside [1, 4096]", l.worker_threads);
  }
  if (l.max_connections < 1) return usage_error("serve: --max-connections must be at least 1");
  if (!(l.header_timeout_s > 0)) return usage_error("serve: --header-timeout must be above 0");
  if (!(l.request_timeout_s >= l.header_timeout_s)) {
    return usage_error("serve: --read-timeout must be at least --header-timeout");
  }
  return ok_status();
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

// Each connection is a descriptor: let the process hold max_connections of them.
void raise_descriptor_limit(int max_connections) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = static_cast<rlim_t>(max_connections) + 256;
  if (rl.rlim_cur >= want) return;
  rl.rlim_cur = std::min(want, rl.rlim_max);
  setrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < want) {
    fmt::print(stderr, "ridge serve: warning: the descriptor limit ({}) is below --max-connections "
                       "{} + 256\n", rl.rlim_cur, max_connections);
  }
}

Result<kernels::Isa> pick_isa(const std::string& name) {
  if (name.empty()) return kernels::best_isa();
  auto isa = kernels::isa_from_name(name);
  if (!isa) return usage_error("serve: --isa '{}' is not one of ref, avx2, avx512", name);
  if (!kernels::isa_supported(*isa)) return usage_error("serve: --isa {}: not supported by this CPU", name);
  return *isa;
}

// Blocks until SIGTERM or SIGINT (which every thread has blocked, so only sigwait sees them).
int wait_for_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  CLI::App app{"OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions, /v1/models, "
               "/health, /metrics, /tokenize, /detokenize", "serve"};
  ServeArgs a;
  add_flags(app, a);
  if (auto rc = parse(app, argc, argv)) return *rc;
  auto isa = pick_isa(a.isa);
  if (!isa.ok()) return report(isa.status());
  auto table = a.device == "cpu" ? Result<const kernels::Kernels*>(&kernels::kernels_for(*isa))
                                 : pick_kernels(a.isa, a.device);
  if (!table.ok()) return report(table.status().with_prefix("serve"));
  a.engine.backend = a.device;
  auto kvt = kv::kv_type_from_name(a.kv_type);
  if (!kvt.ok()) return report(kvt.status().with_prefix("serve: --kv-type"));
  a.engine.kv_type = *kvt;
  a.engine.kv_bytes = static_cast<uint64_t>(a.kv_mib * 1024 * 1024);
  if (a.model_name.empty()) a.model_name = std::filesystem::path(a.model_path).stem().string();
  if (Status s = resolve_api_key(a); !s.ok()) return report(s);
  if (Status s = check_http_limits(a.server.http); !s.ok()) return report(s);
  if (!is_loopback(a.server.host) && a.server.api_key.empty()) {
    fmt::print(stderr, "ridge serve: warning: listening on {} without an API key: anyone who can "
                       "reach this address can use the model (set RIDGE_API_KEY or --api-key-file)\n",
               a.server.host);
  }
  raise_descriptor_limit(a.server.http.max_connections);

  // Signals: a dead client must not kill the process (SIGPIPE), and SIGTERM/SIGINT are taken by
  // sigwait below; block them before any thread starts so every thread inherits the mask.
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  server::Server srv(a.server);
  if (Status s = srv.bind(); !s.ok()) return report(s);
  fmt::print("ridge serve: listening on http://{}:{}\n", a.server.host, srv.port());
  std::fflush(stdout);
  std::thread http([&srv] { srv.run(); });

  auto fail = [&](const Status& s) {
    srv.stop();
    http.join();
    return report(s);
  };
  auto model = model::Model::load(a.model_path, **table, a.backing);
  if (!model.ok()) return fail(model.status());
  auto tok = tokenizer::Tokenizer::from_gguf(model->file());
  if (!tok.ok()) return fail(tok.status());
  auto tmpl = load_chat_template(model->file(), *tok, a.chat);
  if (!tmpl.ok()) return fail(tmpl.status());
  fmt::print(stderr, "ridge serve: chat template: {}\n", tmpl->description());
  if (a.embeddings) {
    auto pooling = resolve_pooling(a.pooling, model->config());
    if (!pooling.ok()) return fail(pooling.status());
    a.engine.pooling = *pooling;
    fmt::print(stderr, "ridge serve: embeddings, {} pooling, {} dimensions\n",
               model::pooling_name(*pooling), model->config().n_embd);
  } else if (!a.pooling.empty()) {
    return fail(Status::usage("--pooling needs --embeddings"));
  }
  if (Status s = resolve_engine_spec(a.spec, *model, a.engine); !s.ok()) return fail(s.with_prefix("serve"));
  auto eng = engine::Engine::create(*model, &*tok, a.engine);
  if (!eng.ok()) return fail(eng.status());
  engine::Engine& engine = **eng;
  std::thread engine_thread([&engine] { engine.run_loop(); });
  fmt::print(stderr, "{}\n", engine::format_budget(engine.budget()));

  server::ModelContext ctx;
  ctx.engine = &engine;
  ctx.tokenizer = &*tok;
  ctx.model_id = a.model_name;
  ctx.max_model_len = engine.budget().max_model_len;
  ctx.max_seqs = engine.options().max_seqs;
  ctx.created = static_cast<int64_t>(std::time(nullptr));
  if (auto probe = analysis::load_probe()) ctx.probed_gbs = probe->read_gbs;
  // --chat-template-kwargs are defaults; a request's chat_template_kwargs win.
  ctx.render_chat = [t = *tmpl, defaults = a.chat.kwargs](const chat::Conversation& c)
      -> Result<chat::RenderedPrompt> {
    if (defaults.empty()) return t.render(c);
    chat::Conversation merged = c;
    for (const auto& [k, v] : defaults.items()) {
      if (!merged.kwargs.contains(k)) merged.kwargs[k] = v;
    }
    return t.render(merged);
  };
  ctx.output_format = tmpl->output_format();
  ctx.embeddings = a.embeddings;
  ctx.n_embd = static_cast<int32_t>(model->config().n_embd);
  ctx.separate_reasoning = a.chat.separate_reasoning();
  srv.set_model(std::move(ctx));
  fmt::print("ridge serve: ready (model '{}', max-model-len {})\n", a.model_name,
             engine.budget().max_model_len);
  std::fflush(stdout);

  const int sig = wait_for_signal();
  fmt::print(stderr, "ridge serve: {} received, draining\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  const bool drained = srv.drain(a.drain_timeout_s);
  if (!drained) {
    fmt::print(stderr, "ridge serve: drain timeout ({} s): aborting {} request(s)\n",
               a.drain_timeout_s, srv.n_in_flight());
    engine.stop(/*drain=*/false);
    (void)srv.drain(5);
  }
  srv.stop();
  http.join();
  engine.stop(/*drain=*/true);
  engine_thread.join();
  return 0;
}

}  // namespace ridge::cli
