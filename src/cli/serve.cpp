// `ridge serve`: load a model, start the engine thread and the OpenAI-compatible HTTP server.
// /health answers 503 until the model is loaded. SIGTERM/SIGINT drain: new requests get 503,
// in-flight ones finish (bounded by --drain-timeout, then aborted), exit 0.
#include <fmt/format.h>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <pthread.h>
#include <thread>

#include "analysis/probe.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/engine.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "server/server.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {

namespace {

struct ServeArgs {
  std::string model_path;
  std::string model_name;
  std::string isa;
  std::string kv_type = "f16";
  std::string chat_template;
  double kv_mib = 0;
  double drain_timeout_s = 30;
  gguf::Backing backing = gguf::Backing::kHugePages;
  engine::EngineOptions engine;
  server::ServerOptions server;
};

void add_flags(CLI::App& app, ServeArgs& a) {
  app.add_option("-m,--model", a.model_path, "GGUF model file")->required();
  app.add_option("--host", a.server.host, "address to listen on (loopback by default)")->capture_default_str();
  app.add_option("--port", a.server.port, "TCP port (0: any free port, printed at start)")->capture_default_str();
  app.add_option("--api-key", a.server.api_key, "require 'Authorization: Bearer KEY'");
  app.add_option("--chat-template", a.chat_template, "chatml, llama3, llama2 or plain (default: from the model)");
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
  app.add_option("-t,--threads", a.engine.n_threads, "engine compute threads")->capture_default_str();
  app.add_option("--isa", a.isa, "force kernels: ref, avx2, avx512");
  add_mmap_flag(app, a.backing);
  app.add_option("--max-queue", a.server.max_queue, "sequences that may wait beyond --max-seqs before 429")->capture_default_str();
  app.add_option("--max-body", a.server.max_body_bytes, "largest request body in bytes (413 beyond)")->capture_default_str();
  app.add_option("--request-timeout", a.server.request_timeout_s, "seconds per request, 0: none")->capture_default_str();
  app.add_option("--drain-timeout", a.drain_timeout_s, "seconds SIGTERM waits for in-flight requests")->capture_default_str();
  app.add_option("--http-threads", a.server.http_threads, "concurrent HTTP connections")->capture_default_str();
  app.add_option("--max-n", a.server.limits.max_n, "most choices (n) per request")->capture_default_str();
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
  auto kvt = kv::kv_type_from_name(a.kv_type);
  if (!kvt.ok()) return report(kvt.status().with_prefix("serve: --kv-type"));
  a.engine.kv_type = *kvt;
  a.engine.kv_bytes = static_cast<uint64_t>(a.kv_mib * 1024 * 1024);
  if (a.model_name.empty()) a.model_name = std::filesystem::path(a.model_path).stem().string();

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
  auto model = model::Model::load(a.model_path, kernels::kernels_for(*isa), a.backing);
  if (!model.ok()) return fail(model.status());
  auto tok = tokenizer::Tokenizer::from_gguf(model->file());
  if (!tok.ok()) return fail(tok.status());
  auto tmpl = a.chat_template.empty() ? Result<tokenizer::ChatTemplate>(
                                             tokenizer::ChatTemplate::from_gguf(model->file(), &*tok))
                                       : tokenizer::ChatTemplate::from_name(a.chat_template);
  if (!tmpl.ok()) return fail(tmpl.status());
  if (!tmpl->recognised()) {
    fmt::print(stderr, "ridge serve: warning: no known chat template in the model; chat prompts "
                       "are rendered as plain text (see --chat-template)\n");
  }
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
  ctx.render_chat = [t = *tmpl](const std::vector<server::ChatMessage>& m)
      -> Result<tokenizer::MarkedText> {
    std::vector<tokenizer::ChatMessage> msgs;
    msgs.reserve(m.size());
    for (const auto& x : m) msgs.push_back({x.role == "developer" ? "system" : x.role, x.content});
    return t.render(msgs, /*add_generation_prompt=*/true);
  };
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
