// The HTTP server end to end against a real Engine (fake runner): endpoints, SSE framing,
// limits and their status codes, disconnects, timeouts, concurrency and drain.
#include <gtest/gtest.h>

#include <future>

#include "test_server_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using testing::TestServer;
using testing::chat_body;

// Streams a POST; `on_chunk` gets the body so far and returns false to hang up.
httplib::Error stream_post(const TestServer& ts, const std::string& path, const std::string& body,
                           std::string& received, int& status,
                           const std::function<bool(const std::string&)>& on_chunk = nullptr) {
  auto c = ts.client();
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    received.append(data, n);
    return on_chunk ? on_chunk(received) : true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  c.send(req, res, err);
  status = res.status;
  return err;
}

TEST(Server, HealthIs503UntilTheModelIsLoaded) {
  TestServer ts({}, TestServer::default_engine(), 256, /*ready=*/false);
  auto c = ts.client();
  auto r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  auto [st, body] = ts.post("/v1/chat/completions", chat_body("hi"));
  EXPECT_EQ(st, 503);
  EXPECT_EQ(body["error"]["type"], "server_error");
  ts.make_ready();
  r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(Server, ChatCompletionNonStreaming) {
  TestServer ts;
  auto [st, j] = ts.post("/v1/chat/completions", chat_body("hello"));
  ASSERT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "test-model");
  ASSERT_EQ(j["choices"].size(), 1u);
  const std::string text = j["choices"][0]["message"]["content"];
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  // Prompt tokens: the ChatML text as the tokenizer encodes it, BOS included.
  const auto prompt = ts.tok().encode(testing::chatml_prompt("hello").text, true, true);
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
  EXPECT_EQ(j["usage"]["total_tokens"], prompt.size() + 12);
  EXPECT_TRUE(j["usage"]["prompt_tokens_details"]["cached_tokens"].is_number());
  EXPECT_EQ(text.size(), 12u);  // every generated token is one byte
  for (const char* k : {"queue_ms", "ttft_ms", "decode_tokens_per_s", "engine_bytes_moved",
                        "achieved_gbs", "probed_gbs", "roof_fraction"}) {
    EXPECT_TRUE(j["timings"].contains(k)) << k;
  }
  EXPECT_TRUE(ts.wait_idle());
}

TEST(Server, StreamingMatchesNonStreamingAndFramesSse) {
  TestServer ts;
  auto [st, whole] = ts.post("/v1/chat/completions", chat_body("stream me"));
  ASSERT_EQ(st, 200);
  std::string body;
  int status = 0;
  stream_post(ts, "/v1/chat/completions",
              chat_body("stream me", {{"stream", true}, {"stream_options", {{"include_usage", true}}}}),
              body, status);
  ASSERT_EQ(status, 200);
  const auto events = testing::sse_payloads(body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  std::string finish;
  json usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_TRUE(c.contains("usage"));  // null except in the last chunk (include_usage)
    if (c["choices"].empty()) {
      usage = c["usage"];
      continue;
    }
    const json& ch = c["choices"][0];
    if (i == 0) {
      EXPECT_EQ(ch["delta"]["role"], "assistant");
    }
    if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
  }
  EXPECT_EQ(text, whole["choices"][0]["message"]["content"]);
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(usage["completion_tokens"], 12);
  EXPECT_EQ(usage["prompt_tokens"], whole["usage"]["prompt_tokens"]);
}

TEST(Server, CompletionsWithEchoStopAndLogprobs) {
  TestServer ts;
  json req = {{"prompt", "abc"}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true},
              {"logprobs", 3}};
  auto [st, j] = ts.post("/v1/completions", req.dump());
  ASSERT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["object"], "text_completion");
  const std::string text = j["choices"][0]["text"];
  ASSERT_EQ(text.size(), 8u);
  const json& lp = j["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 8u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 3u);
  EXPECT_LE(lp["token_logprobs"][0].get<double>(), 0.0);
  // Stop at the third generated character: the text ends before it, finish_reason stop.
  req["stop"] = text.substr(2, 1);
  req.erase("logprobs");
  auto [st2, j2] = ts.post("/v1/completions", req.dump());
  ASSERT_EQ(st2, 200);
  const std::string stopped = j2["choices"][0]["text"];
  EXPECT_EQ(j2["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(stopped, text.substr(0, text.find(text[2])));
  req.erase("stop");
  req["echo"] = true;
  auto [st3, j3] = ts.post("/v1/completions", req.dump());
  ASSERT_EQ(st3, 200);
  EXPECT_EQ(j3["choices"][0]["text"], "abc" + text);
}

TEST(Server, SeveralChoicesShareThePromptBlocks) {
  TestServer ts;
  const std::string long_text(40, 'x');  // 40+ prompt tokens: several full KV blocks of 4
  auto [st, j] = ts.post("/v1/chat/completions",
                         chat_body(long_text, {{"n", 3}, {"temperature", 1.0}, {"seed", 5}}));
  ASSERT_EQ(st, 200) << j.dump();
  ASSERT_EQ(j["choices"].size(), 3u);
  const auto& cached = j["timings"]["cached_prompt_tokens_per_choice"];
  ASSERT_EQ(cached.size(), 3u);
  EXPECT_GE(cached[1].get<int>(), 40);
  EXPECT_GE(cached[2].get<int>(), 40);
  EXPECT_EQ(j["usage"]["completion_tokens"], 36);
  EXPECT_TRUE(ts.wait_idle());
}

TEST(Server, BadRequestsAre4xxNamingTheField) {
  TestServer ts;
  struct Case {
    std::string body;
    int status;
    std::string param;
  };
  const std::vector<Case> cases = {
      {"{\"messages\": [", 400, ""},
      {"[]", 400, ""},
      {chat_body("x", {{"temperature", -1}}), 400, "temperature"},
      {chat_body("x", {{"top_p", "high"}}), 400, "top_p"},
      {chat_body("x", {{"frobnicate", true}}), 400, "frobnicate"},
      {json({{"messages", json::array()}}).dump(), 400, "messages"},
      {chat_body("x", {{"model", "gpt-9"}}), 404, "model"},
      {chat_body(std::string(300, 'y')), 400, "messages"},        // prompt over max-model-len
      {chat_body("x", {{"max_tokens", 250}}), 400, "max_tokens"},  // prompt + max_tokens > 256
      {chat_body("x", {{"logit_bias", {{"99999", 1}}}}), 400, "logit_bias"},
  };
  for (const auto& c : cases) {
    auto [st, j] = ts.post("/v1/chat/completions", c.body);
    EXPECT_EQ(st, c.status) << c.body;
    ASSERT_TRUE(j.contains("error")) << c.body;
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
    if (!c.param.empty()) {
      EXPECT_EQ(j["error"]["param"], c.param) << c.body;
    }
  }
  auto [st, j] = ts.post("/v1/chat/completions", chat_body(std::string(300, 'y')));
  EXPECT_EQ(j["error"]["code"], "context_length_exceeded");
  // The server keeps serving.
  EXPECT_EQ(ts.post("/v1/chat/completions", chat_body("fine")).first, 200);
  EXPECT_EQ(ts.post("/v1/nothing", "{}").first, 404);
}

TEST(Server, ApiKey) {
  ServerOptions o;
  o.api_key = "sekrit";
  TestServer ts(o);
  EXPECT_EQ(ts.post("/v1/chat/completions", chat_body("x")).first, 401);
  auto [st, j] = ts.post("/v1/chat/completions", chat_body("x"), {{"Authorization", "Bearer nope"}});
  EXPECT_EQ(st, 401);
  EXPECT_EQ(j["error"]["type"], "authentication_error");
  EXPECT_EQ(ts.post("/v1/chat/completions", chat_body("x"), {{"Authorization", "Bearer sekrit"}}).first, 200);
  EXPECT_EQ(ts.post("/tokenize", R"({"prompt":"a"})").first, 401);
  auto c = ts.client();
  EXPECT_EQ(c.Get("/v1/models")->status, 401);
  EXPECT_EQ(c.Get("/health")->status, 200);  // probes need no key
}

TEST(Server, BodyTooLargeIs413) {
  ServerOptions o;
  o.http.max_body_bytes = 1000;
  TestServer ts(o);
  auto [st, j] = ts.post("/v1/chat/completions", chat_body(std::string(2000, 'z')));
  EXPECT_EQ(st, 413);
  EXPECT_EQ(j["error"]["code"], "payload_too_large");
  EXPECT_EQ(ts.post("/v1/chat/completions", chat_body("small")).first, 200);
}

TEST(Server, FullQueueIs429WithRetryAfter) {
  ServerOptions o;
  o.max_queue = 0;
  auto e = TestServer::default_engine();
  e.max_seqs = 1;
  TestServer ts(o, e);
  ts.runner().step_ms = 20;
  auto slow = std::async(std::launch::async, [&] {
    return ts.post("/v1/chat/completions", chat_body("slow", {{"max_tokens", 40}})).first;
  });
  while (ts.server().n_in_flight() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto c = ts.client();
  auto r = c.Post("/v1/chat/completions", chat_body("second"), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(slow.get(), 200);
  EXPECT_EQ(ts.post("/v1/chat/completions", chat_body("third")).first, 200);
}

// Requests that arrive together cannot all take the last places: the check and the reservation
// are one step. Capacity 2 (one running, one waiting); eight arrive within the first request's
// 2 s, so exactly two are served and six refused, and every place is free again afterwards.
// With httplib's own listen backlog (5) the last connections came a second late, after the
// SYN was resent, and found a place free (5 of 6 runs failed).
TEST(Server, SimultaneousArrivalsNeverOverfillTheQueue) {
  ServerOptions o;
  o.max_queue = 1;
  auto e = TestServer::default_engine();
  e.max_seqs = 1;
  TestServer ts(o, e);
  ts.runner().step_ms = 20;
  std::atomic<bool> go{false};
  std::vector<std::future<int>> posts;
  for (int i = 0; i < 8; ++i) {
    posts.push_back(std::async(std::launch::async, [&, i] {
      while (!go.load()) std::this_thread::yield();
      return ts.post("/v1/chat/completions",
                     chat_body(fmt::format("racer {}", i), {{"max_tokens", 100}})).first;
    }));
  }
  go = true;
  int ok = 0, refused = 0;
  for (auto& p : posts) {
    const int st = p.get();
    ok += st == 200;
    refused += st == 429;
  }
  EXPECT_EQ(ok, 2);
  EXPECT_EQ(refused, 6);
  // Both places are free again once the two have finished: a request for n = 2 needs both.
  EXPECT_EQ(ts.post("/v1/chat/completions", chat_body("after", {{"n", 2}})).first, 200);
}

TEST(Server, DisconnectMidStreamAbortsAndFreesBlocks) {
  TestServer ts;
  ts.runner().step_ms = 10;
  std::string body;
  int status = 0;
  int chunks = 0;
  stream_post(ts, "/v1/chat/completions",
              chat_body("bye", {{"stream", true}, {"max_tokens", 200}}), body, status,
              [&](const std::string&) { return ++chunks < 3; });  // hang up after 3 chunks
  EXPECT_GE(chunks, 3);
  // The request is aborted within a few steps, long before its 200 tokens (2 s of steps).
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(ts.wait_idle(1.0));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1000));
  EXPECT_EQ(ts.engine().stats().kv_blocks_used, 0);
  auto m = ts.client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("\nridge_kv_blocks_used 0\n"), std::string::npos);
}

TEST(Server, NonStreamingDisconnectAlsoAborts) {
  TestServer ts;
  ts.runner().step_ms = 10;
  {
    auto c = ts.client();
    c.set_read_timeout(0, 200000);  // give up (close) after 0.2 s
    auto r = c.Post("/v1/chat/completions", chat_body("x", {{"max_tokens", 200}}), "application/json");
    EXPECT_FALSE(r);
  }
  EXPECT_TRUE(ts.wait_idle(1.0));
}

TEST(Server, RequestTimeoutIs408) {
  ServerOptions o;
  o.request_timeout_s = 0.3;
  TestServer ts(o);
  ts.runner().step_ms = 20;
  auto [st, j] = ts.post("/v1/chat/completions", chat_body("x", {{"max_tokens", 100}}));
  EXPECT_EQ(st, 408);
  EXPECT_EQ(j["error"]["type"], "timeout_error");
  EXPECT_TRUE(ts.wait_idle(1.0));
}

TEST(Server, ConcurrentStreamsEqualRunsAlone) {
  TestServer ts;
  constexpr int kClients = 6;
  std::vector<std::string> alone(kClients);
  for (int i = 0; i < kClients; ++i) {
    auto [st, j] = ts.post("/v1/chat/completions",
                           chat_body(fmt::format("client {} says {}", i, std::string(i * 3, 'q')),
                                     {{"max_tokens", 30}}));
    ASSERT_EQ(st, 200);
    alone[i] = j["choices"][0]["message"]["content"];
  }
  ts.runner().step_ms = 2;  // keep them overlapping
  std::vector<std::future<std::string>> futs;
  for (int i = 0; i < kClients; ++i) {
    futs.push_back(std::async(std::launch::async, [&, i] {
      std::string body;
      int status = 0;
      stream_post(ts, "/v1/chat/completions",
                  chat_body(fmt::format("client {} says {}", i, std::string(i * 3, 'q')),
                            {{"max_tokens", 30}, {"stream", true}}),
                  body, status);
      std::string text;
      for (const auto& p : testing::sse_payloads(body)) {
        if (p == "[DONE]") continue;
        const json c = json::parse(p);
        if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content")) {
          text += c["choices"][0]["delta"]["content"].get<std::string>();
        }
      }
      return text;
    }));
  }
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(futs[i].get(), alone[i]) << "client " << i;
  EXPECT_TRUE(ts.wait_idle());
}

TEST(Server, DrainFinishesInFlightAndRefusesNew) {
  TestServer ts;
  ts.runner().step_ms = 10;
  auto inflight = std::async(std::launch::async, [&] {
    return ts.post("/v1/chat/completions", chat_body("x", {{"max_tokens", 30}}));
  });
  while (ts.server().n_in_flight() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto drained = std::async(std::launch::async, [&] { return ts.server().drain(10); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(ts.post("/v1/chat/completions", chat_body("late")).first, 503);
  EXPECT_EQ(ts.client().Get("/health")->status, 503);
  auto [st, j] = inflight.get();
  EXPECT_EQ(st, 200);
  EXPECT_EQ(j["usage"]["completion_tokens"], 30);
  EXPECT_TRUE(drained.get());
}

TEST(Server, ModelsTokenizeDetokenizeMetrics) {
  TestServer ts;
  auto c = ts.client();
  auto r = c.Get("/v1/models");
  ASSERT_TRUE(r);
  const json models = json::parse(r->body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "test-model");
  auto [st, tj] = ts.post("/tokenize", R"({"prompt": "hey", "add_special_tokens": false})");
  ASSERT_EQ(st, 200);
  EXPECT_EQ(tj["tokens"], json::array({testing::kByteBase + 'h', testing::kByteBase + 'e',
                                       testing::kByteBase + 'y'}));
  auto [st2, dj] = ts.post("/detokenize", json({{"tokens", tj["tokens"]}}).dump());
  ASSERT_EQ(st2, 200);
  EXPECT_EQ(dj["prompt"], "hey");
  EXPECT_EQ(ts.post("/detokenize", R"({"tokens": [999999]})").first, 400);
  ASSERT_EQ(ts.post("/v1/chat/completions", chat_body("m")).first, 200);
  r = c.Get("/metrics");
  ASSERT_TRUE(r);
  for (const char* line : {"ridge_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 1",
                           "ridge_generated_tokens_total 12", "ridge_time_to_first_token_seconds_count 1",
                           "ridge_kv_blocks_free ", "ridge_queue_depth 0", "ridge_roof_fraction "}) {
    EXPECT_NE(r->body.find(line), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace ridge::server
