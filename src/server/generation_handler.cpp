// POST /v1/chat/completions and /v1/completions: non-streaming and SSE streaming answers.
#include <fmt/format.h>

#include "base/timer.h"
#include "server/generation.h"

namespace ridge::server {

using nlohmann::json;

namespace {

constexpr double kPollSeconds = 0.05;  // how often a waiting handler checks its client

// Metrics of a finished run: token counts, TTFT, end-to-end and queue latency.
void record_run(Metrics& metrics, const GenerationRun& run) {
  const Usage u = run.usage();
  metrics.add_tokens(u.prompt_tokens, u.completion_tokens, u.cached_tokens);
  for (const auto& c : run.choices()) {
    if (c.stats.first_token_time > 0) metrics.observe_ttft(c.stats.ttft());
    if (c.stats.first_scheduled_time > 0) metrics.observe_queue(c.stats.queue_time());
    if (c.stats.finish_time > 0) metrics.observe_e2e(c.stats.latency());
  }
}

// Per-choice time of the previous token event, for the inter-token histogram.
void record_inter_token(Metrics& metrics, const std::vector<OutputChannel::Event>& events,
                        std::vector<double>& last_token_time) {
  for (const auto& e : events) {
    if (e.out.tokens.empty()) continue;
    double& last = last_token_time[e.choice];
    const double t = e.out.stats.last_token_time;
    if (last > 0 && t > last) {
      const double per = (t - last) / static_cast<double>(e.out.tokens.size());
      for (size_t i = 0; i < e.out.tokens.size(); ++i) metrics.observe_inter_token(per);
    }
    last = t;
  }
}

ApiError timeout_error(double seconds) {
  ApiError e;
  e.status = 408;
  e.type = "timeout_error";
  e.code = "request_timeout";
  e.message = fmt::format("the request did not finish within the server's timeout ({} s)",
                          seconds);
  return e;
}

}  // namespace

// The run's tokens and latencies count once, before its last bytes reach the client (a scrape
// right after the answer sees them), or when the handler leaves early.
class RunMetrics {
 public:
  RunMetrics(Metrics& metrics, const GenerationRun& run) : metrics_(metrics), run_(run) {}
  ~RunMetrics() { record(); }
  RunMetrics(const RunMetrics&) = delete;
  RunMetrics& operator=(const RunMetrics&) = delete;
  void record() {
    if (recorded_) return;
    recorded_ = true;
    record_run(metrics_, run_);
  }

 private:
  Metrics& metrics_;
  const GenerationRun& run_;
  bool recorded_ = false;
};

namespace {

// A choice that the engine ended itself (drain timeout, engine failure) has no OpenAI finish
// reason: the client gets an error instead.
std::optional<ApiError> cut_by_server(engine::FinishReason finish) {
  if (finish == engine::FinishReason::kAbort) {
    return unavailable("the server shut down before the request finished");
  }
  if (finish == engine::FinishReason::kError) {
    return server_error("the engine could not finish the request");
  }
  return std::nullopt;
}

bool ends_normally(engine::FinishReason f) {
  return f == engine::FinishReason::kStop || f == engine::FinishReason::kLength;
}

// Ends a stream with an error event and [DONE]; the metrics record `status`.
void end_stream_with_error(http::Exchange& ex, const ApiError& e) {
  ex.set_outcome(e.status);
  ex.write_chunk(sse_event(e.to_json()) + kSseDone);
  ex.end_stream();
}

}  // namespace

void Server::stream_generation(GenerationRun& run, http::Exchange& ex, double deadline,
                               RunMetrics& run_metrics) {
  const PreparedRequest& req = run.request();
  const bool usage = req.spec.include_usage;
  const size_t n = run.choices().size();
  std::vector<bool> opened(n, false);       // chat: role chunk sent; completion: echo sent
  std::vector<size_t> text_offset(n, 0);    // completion logprobs: bytes of text sent so far
  std::vector<double> last_token_time(n, 0);
  if (!ex.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}})) {
    run.abort_all();
    return ex.set_outcome(499);
  }
  const tokenizer::Tokenizer& tok = *model()->tokenizer;
  for (;;) {
    if (ex.client_gone()) {
      run.abort_all();
      return ex.set_outcome(499);
    }
    auto events = run.poll(kPollSeconds);
    record_inter_token(metrics_, events, last_token_time);
    std::string out;
    std::optional<ApiError> cut;
    for (const auto& e : events) {
      if (e.out.finished() && !ends_normally(e.out.finish)) {
        cut = cut_by_server(e.out.finish);
        if (cut) continue;
      }
      json lp = nullptr;
      if (req.spec.n_logprobs >= 0 && !e.out.logprobs.empty()) {
        lp = logprobs_json(req.ids.endpoint, e.out.logprobs, tok, text_offset[e.choice]);
      }
      if (req.ids.endpoint == Endpoint::kChat) {
        const bool has = !e.delta.empty();
        if (!opened[e.choice] && (has || e.out.finished())) {  // the opening role chunk comes alone
          out += sse_event(chat_chunk_json(req.ids, e.choice, {}, nullptr, "", true, usage));
          opened[e.choice] = true;
        }
        const bool calls = !run.choices()[e.choice].parsed.tool_calls.empty();
        const std::string finish =
            e.out.finished() ? finish_reason_text(e.out.finish, calls) : std::string();
        if (has || !lp.is_null() || e.out.finished()) {
          out += sse_event(chat_chunk_json(req.ids, e.choice, e.delta, lp, finish, false, usage));
        }
        continue;
      }
      std::string text = e.out.text;
      if (!opened[e.choice] && req.spec.echo) text = req.echo_prefix + text;
      opened[e.choice] = opened[e.choice] || !text.empty();
      text_offset[e.choice] += text.size();
      if (!text.empty() || !lp.is_null() || e.out.finished()) {
        out += sse_event(chunk_json(req.ids, e.choice, text, lp, e.out.finish, usage));
      }
    }
    if (cut || run.finished() || (deadline > 0 && now_seconds() > deadline)) run_metrics.record();
    if (cut) {
      run.abort_all();
      ex.write_chunk(out);
      return end_stream_with_error(ex, *cut);
    }
    if (deadline > 0 && now_seconds() > deadline && !run.finished()) {
      run.abort_all();
      ex.write_chunk(out);
      return end_stream_with_error(ex, timeout_error(opts_.request_timeout_s));
    }
    if (run.finished()) {
      if (usage) {
        json last = usage_chunk_json(req.ids, run.usage());
        last["timings"] = run.timings();
        out += sse_event(last);
      }
      out += kSseDone;
      ex.write_chunk(out);
      return ex.end_stream();
    }
    if (!out.empty() && !ex.write_chunk(out)) {
      run.abort_all();
      return ex.set_outcome(499);
    }
  }
}

void Server::handle_generation(const http::Request& req, http::Exchange& ex, Endpoint endpoint) {
  auto fail = [&](const ApiError& e) { ex.respond(error_response(e)); };
  if (auto e = check_key(req)) return fail(*e);
  auto model_ctx = model();
  if (!model_ctx) return fail(unavailable("the model is still loading"));
  if (draining_) return fail(unavailable("the server is shutting down"));
  if (model_ctx->embeddings) {
    return fail(invalid_param("", "this server runs an embedding model (--embeddings): use "
                                  "/v1/embeddings"));
  }
  PreparedRequest prepared;
  if (auto e = prepare_generation(*model_ctx, req.body, endpoint, opts_.limits, prepared)) {
    return fail(*e);
  }
  for (const auto& f : prepared.spec.ignored_fields) warn_ignored_field(f);
  // The run releases each choice's place when that choice ends.
  if (auto e = reserve_seqs(*model_ctx, prepared.spec.n)) return fail(*e);
  n_requests_.fetch_add(1);
  auto run = std::make_unique<GenerationRun>(model_ctx, std::move(prepared), &n_seqs_);
  if (auto e = run->start()) {
    n_requests_.fetch_sub(1);
    return fail(*e);
  }
  const double deadline =
      opts_.request_timeout_s > 0 ? run->request().arrival + opts_.request_timeout_s : 0;
  // The request stays in flight (drain waits for it) until its last byte is written.
  struct InFlight {
    std::atomic<int64_t>* n;
    ~InFlight() { n->fetch_sub(1); }
  } in_flight{&n_requests_};
  RunMetrics run_metrics(metrics_, *run);

  if (run->request().spec.stream) return stream_generation(*run, ex, deadline, run_metrics);

  // Non-streaming: wait for every choice, watching the client and the deadline.
  std::vector<double> last_token_time(run->choices().size(), 0);
  int status = 200;
  while (!run->finished()) {
    record_inter_token(metrics_, run->poll(kPollSeconds), last_token_time);
    if (ex.client_gone()) {
      run->abort_all();
      status = 499;
    } else if (deadline > 0 && now_seconds() > deadline && !run->finished()) {
      run->abort_all();
      status = 408;
    }
  }
  run_metrics.record();
  if (status == 499) return ex.set_outcome(499);
  if (status == 408) return fail(timeout_error(opts_.request_timeout_s));
  for (const auto& c : run->choices()) {
    if (auto cut = cut_by_server(c.finish)) return fail(*cut);
  }
  const PreparedRequest& p = run->request();
  json body = completion_json(p.ids, run->choices(), run->usage(), p.spec.n_logprobs >= 0,
                              *model_ctx->tokenizer, p.spec.echo ? p.echo_prefix : "");
  body["timings"] = run->timings();
  http::Response res;
  res.body = dump_json(body);
  ex.respond(std::move(res));
}

}  // namespace ridge::server
