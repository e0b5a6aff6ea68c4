// POST /v1/chat/completions and /v1/completions: non-streaming and SSE streaming answers.
#include <httplib.h>

#include <fmt/format.h>

#include "base/timer.h"
#include "server/generation.h"
#include "server/socket_watch.h"

namespace ridge::server {

using nlohmann::json;

namespace {

constexpr double kPollSeconds = 0.05;  // how often a waiting handler checks its client

const char* endpoint_path(Endpoint e) {
  return e == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
}

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

// State of one streaming response; lives in the content provider after the handler returns.
struct StreamState {
  std::unique_ptr<GenerationRun> run;
  SocketWatch watch;
  Metrics* metrics = nullptr;
  std::atomic<int64_t>* n_requests = nullptr;
  double deadline = 0;
  double timeout_s = 0;
  std::vector<bool> opened;        // chat: role chunk sent
  std::vector<size_t> text_offset;  // completion logprobs: bytes of text sent so far
  const tokenizer::Tokenizer* tokenizer = nullptr;
  std::vector<double> last_token_time;
  bool done = false;
  int status = 200;

  ~StreamState() {
    if (!done) status = 499;  // client closed request
    metrics->count_request(endpoint_path(run->request().spec.endpoint), status);
    record_run(*metrics, *run);
    run.reset();
    n_requests->fetch_sub(1);
  }

  // Writes the SSE events for new output; false when the client is gone.
  bool step(httplib::DataSink& sink) {
    if (watch.peer_closed()) {
      run->abort_all();
      return false;
    }
    const PreparedRequest& req = run->request();
    const bool usage = req.spec.include_usage;
    auto events = run->poll(kPollSeconds);
    record_inter_token(*metrics, events, last_token_time);
    std::string out;
    for (const auto& e : events) {
      std::string text = e.out.text;
      if (!opened[e.choice] && req.spec.echo) text = req.echo_prefix + text;
      const bool role = !opened[e.choice] && req.ids.endpoint == Endpoint::kChat;
      if (role && (!text.empty() || e.out.finished())) {  // the opening role chunk comes alone
        out += sse_event(chunk_json(req.ids, e.choice, "", nullptr, engine::FinishReason::kNone,
                                    true, usage));
      }
      opened[e.choice] = opened[e.choice] || role || !text.empty();
      json lp = nullptr;
      if (req.spec.n_logprobs >= 0 && !e.out.logprobs.empty()) {
        lp = logprobs_json(req.ids.endpoint, e.out.logprobs, *tokenizer, text_offset[e.choice]);
      }
      text_offset[e.choice] += text.size();
      if (!text.empty() || !lp.is_null() || e.out.finished()) {
        out += sse_event(chunk_json(req.ids, e.choice, text, lp, e.out.finish, false, usage));
      }
    }
    if (now_seconds() > deadline && deadline > 0 && !run->finished()) {
      run->abort_all();
      out += sse_event(timeout_error(timeout_s).to_json());
      out += kSseDone;
      done = true;
      status = 408;
    } else if (run->finished()) {
      if (usage) {
        json last = usage_chunk_json(req.ids, run->usage());
        last["timings"] = run->timings();
        out += sse_event(last);
      }
      out += kSseDone;
      done = true;
    }
    if (!out.empty() && !sink.write(out.data(), out.size())) {
      run->abort_all();
      done = false;
      return false;
    }
    if (done) sink.done();
    return true;
  }
};

}  // namespace

void Server::handle_generation(const httplib::Request& req, httplib::Response& res,
                               Endpoint endpoint) {
  const char* path = endpoint_path(endpoint);
  auto fail = [&](const ApiError& e) {
    metrics_.count_request(path, e.status);
    send_error(res, e);
  };
  if (!authorized(req, res)) return metrics_.count_request(path, 401);
  auto model_ctx = model();
  if (!model_ctx) return fail(unavailable("the model is still loading"));
  if (draining_) return fail(unavailable("the server is shutting down"));
  PreparedRequest prepared;
  if (auto e = prepare_generation(*model_ctx, req.body, endpoint, opts_.limits, prepared)) {
    return fail(*e);
  }
  // Check and reserve in one step, so two requests arriving together cannot both take the last
  // places; the run releases each choice's place when that choice ends.
  const int64_t capacity = model_ctx->max_seqs + opts_.max_queue;
  int64_t held = n_seqs_.load();
  do {
    if (held + prepared.spec.n > capacity) {
      return fail(too_many_requests(fmt::format(
          "the server's queue is full ({} sequences running or waiting); retry later", held)));
    }
  } while (!n_seqs_.compare_exchange_weak(held, held + prepared.spec.n));
  n_requests_.fetch_add(1);
  auto run = std::make_unique<GenerationRun>(model_ctx, std::move(prepared), &n_seqs_);
  if (auto e = run->start()) {
    n_requests_.fetch_sub(1);
    return fail(*e);
  }
  const double deadline =
      opts_.request_timeout_s > 0 ? run->request().arrival + opts_.request_timeout_s : 0;
  SocketWatch watch(req.remote_addr, req.remote_port, req.local_port);

  if (run->request().spec.stream) {
    auto state = std::make_shared<StreamState>();
    state->run = std::move(run);
    state->watch = watch;
    state->metrics = &metrics_;
    state->n_requests = &n_requests_;
    state->deadline = deadline;
    state->timeout_s = opts_.request_timeout_s;
    const size_t n = state->run->choices().size();
    state->opened.assign(n, false);
    state->text_offset.assign(n, 0);
    state->tokenizer = model_ctx->tokenizer;
    state->last_token_time.assign(n, 0);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [state](size_t, httplib::DataSink& sink) { return state->done || state->step(sink); },
        [state](bool) { state->run->abort_all(); });
    return;
  }

  // Non-streaming: wait for every choice, watching the client and the deadline.
  std::vector<double> last_token_time(run->choices().size(), 0);
  int status = 200;
  while (!run->finished()) {
    record_inter_token(metrics_, run->poll(kPollSeconds), last_token_time);
    if (watch.peer_closed()) {
      run->abort_all();
      status = 499;
    } else if (deadline > 0 && now_seconds() > deadline && !run->finished()) {
      run->abort_all();
      status = 408;
    }
  }
  record_run(metrics_, *run);
  n_requests_.fetch_sub(1);
  if (status != 200) {
    metrics_.count_request(path, status);
    if (status == 408) send_error(res, timeout_error(opts_.request_timeout_s));
    return;
  }
  const PreparedRequest& p = run->request();
  json body = completion_json(p.ids, run->choices(), run->usage(), p.spec.n_logprobs >= 0,
                              *model_ctx->tokenizer, p.spec.echo ? p.echo_prefix : "");
  body["timings"] = run->timings();
  metrics_.count_request(path, 200);
  res.set_content(dump_json(body), "application/json");
}

}  // namespace ridge::server
