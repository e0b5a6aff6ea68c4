// `ridge serve --spec ngram` through HTTP: the same completions (text and logprobs, greedy and
// sampled) as without speculation, with the drafts counted in /metrics and in each response's
// timings.
#include <gtest/gtest.h>

#include "test_server_util.h"

namespace ridge::server {
namespace {

using testing::TestServer;
using testing::chat_body;

engine::EngineOptions spec_engine() {
  engine::EngineOptions o = TestServer::default_engine();
  o.spec = engine::SpecMethod::kNgram;
  o.spec_cost_rule = false;  // drafts whatever the step times (the fake runner's are noise)
  return o;
}

int64_t metric(const std::string& body, const std::string& name) {
  const size_t at = body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stoll(body.substr(at + name.size() + 2));
}

TEST(SpecServer, CompletionsUnchangedAndDraftsReported) {
  TestServer plain;
  TestServer spec({}, spec_engine());
  const std::vector<std::string> bodies = {
      chat_body("abcabcabcabc abc abc", {{"max_tokens", 40}}),
      chat_body("xyzzy xyzzy xyzzy", {{"max_tokens", 30}, {"temperature", 0.9}, {"seed", 17},
                                      {"logprobs", true}, {"top_logprobs", 2}}),
      chat_body("the the the the", {{"max_tokens", 25}, {"n", 2}, {"temperature", 0.7}, {"seed", 3}}),
  };
  int64_t drafted = 0;
  for (const std::string& body : bodies) {
    auto [st0, want] = plain.post("/v1/chat/completions", body);
    auto [st1, got] = spec.post("/v1/chat/completions", body);
    ASSERT_EQ(st0, 200) << want.dump();
    ASSERT_EQ(st1, 200) << got.dump();
    EXPECT_EQ(got["choices"], want["choices"]);
    EXPECT_EQ(got["usage"]["completion_tokens"], want["usage"]["completion_tokens"]);
    EXPECT_EQ(want["timings"]["draft_tokens"], 0);
    drafted += got["timings"]["draft_tokens"].get<int64_t>();
    EXPECT_LE(got["timings"]["accepted_draft_tokens"].get<int64_t>(), got["timings"]["draft_tokens"].get<int64_t>());
  }
  EXPECT_GT(drafted, 0);
  auto m = spec.client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(metric(m->body, "ridge_spec_draft_tokens_total"), drafted);
  EXPECT_GE(metric(m->body, "ridge_spec_accepted_tokens_total"), 0);
  EXPECT_TRUE(spec.wait_idle());
  EXPECT_EQ(spec.engine().stats().kv_blocks_used, 0);
}

// Predicted Outputs without --spec: the text the client expects drafts the tokens; the answer is
// the same, and usage says how many of the drafted tokens the output took.
TEST(SpecServer, PredictionDraftsWithoutSpecAndIsValidated) {
  engine::EngineOptions o = TestServer::default_engine();
  o.spec_cost_rule = false;  // counts that do not depend on step times
  TestServer ts({}, o);
  const std::string body = chat_body("predict me", {{"max_tokens", 40}});
  auto [st0, plain] = ts.post("/v1/chat/completions", body);
  ASSERT_EQ(st0, 200) << plain.dump();
  EXPECT_FALSE(plain["usage"].contains("completion_tokens_details"));
  const std::string text = plain["choices"][0]["message"]["content"];
  for (const nlohmann::json& prediction :
       {nlohmann::json{{"type", "content"}, {"content", text}},
        nlohmann::json{{"type", "content"},
                       {"content", {{{"type", "text"}, {"text", text.substr(0, 10)}},
                                    {{"type", "text"}, {"text", text.substr(10)}}}}}}) {
    auto [st, j] = ts.post("/v1/chat/completions", chat_body("predict me", {{"max_tokens", 40}, {"prediction", prediction}}));
    ASSERT_EQ(st, 200) << j.dump();
    EXPECT_EQ(j["choices"], plain["choices"]);
    const auto& details = j["usage"]["completion_tokens_details"];
    EXPECT_GE(details["accepted_prediction_tokens"].get<int64_t>(), 10) << j["usage"].dump();
    EXPECT_EQ(details["rejected_prediction_tokens"].get<int64_t>() + details["accepted_prediction_tokens"].get<int64_t>(),
              j["timings"]["draft_tokens"].get<int64_t>());
  }
  // A wrong prediction: the same answer.
  auto [stw, wrong] = ts.post("/v1/chat/completions",
                              chat_body("predict me", {{"max_tokens", 40}, {"prediction", {{"type", "content"}, {"content", "zzzz qqqq"}}}}));
  ASSERT_EQ(stw, 200);
  EXPECT_EQ(wrong["choices"], plain["choices"]);
  for (const char* bad : {R"("text")", R"({"type": "file", "content": "x"})", R"({"type": "content"})",
                          R"({"type": "content", "content": 5})", R"({"type": "content", "content": [{"type": "image"}]})",
                          R"({"type": "content", "content": "x", "extra": 1})"}) {
    nlohmann::json b = nlohmann::json::parse(chat_body("x"));
    b["prediction"] = nlohmann::json::parse(bad);
    auto [st, j] = ts.post("/v1/chat/completions", b.dump());
    EXPECT_EQ(st, 400) << bad;
    EXPECT_NE(j.dump().find("prediction"), std::string::npos) << j.dump();
  }
  EXPECT_TRUE(ts.wait_idle());
  EXPECT_EQ(ts.engine().stats().kv_blocks_used, 0);
}

}  // namespace
}  // namespace ridge::server
