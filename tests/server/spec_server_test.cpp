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

}  // namespace
}  // namespace ridge::server
