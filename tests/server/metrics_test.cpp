// Prometheus exposition: histogram buckets are cumulative and agree with _count/_sum; counters
// carry their labels.
#include <gtest/gtest.h>

#include <sstream>

#include "server/metrics.h"
#include "server/openai_response.h"

namespace ridge::server {
namespace {

TEST(Metrics, HistogramBucketsAreCumulative) {
  Histogram h({0.1, 1, 10});
  for (double x : {0.05, 0.1, 0.5, 5.0, 50.0}) h.observe(x);
  std::string out;
  h.render("t", out);
  EXPECT_NE(out.find("t_bucket{le=\"0.1\"} 2\n"), std::string::npos) << out;  // le is inclusive
  EXPECT_NE(out.find("t_bucket{le=\"1\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_bucket{le=\"10\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_bucket{le=\"+Inf\"} 5\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_count 5\n"), std::string::npos) << out;
  EXPECT_DOUBLE_EQ(h.sum(), 55.65);
}

TEST(Metrics, RenderHasEveryFamilyOnce) {
  Metrics m;
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 429);
  m.add_tokens(10, 5, 4);
  m.observe_ttft(0.02);
  EngineSnapshot e;
  e.kv_blocks_total = 100;
  e.kv_blocks_free = 90;
  e.kv_blocks_used = 10;
  e.live_gbs = 20;
  e.probed_gbs = 40;
  e.state_snapshots = 7;
  e.state_hits = 3;
  const std::string out = m.render(e, true);
  EXPECT_NE(out.find("ridge_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"), std::string::npos);
  EXPECT_NE(out.find("ridge_requests_total{endpoint=\"/v1/completions\",status=\"429\"} 1\n"), std::string::npos);
  EXPECT_NE(out.find("ridge_prompt_tokens_total 10\n"), std::string::npos);
  EXPECT_NE(out.find("ridge_generated_tokens_total 5\n"), std::string::npos);
  EXPECT_NE(out.find("ridge_kv_blocks_free 90\n"), std::string::npos);
  EXPECT_NE(out.find("ridge_state_snapshots_total 7\n"), std::string::npos);
  EXPECT_NE(out.find("ridge_state_cache_hits_total 3\n"), std::string::npos);
  EXPECT_NE(out.find("ridge_roof_fraction 0.5\n"), std::string::npos);
  EXPECT_NE(out.find("ridge_time_to_first_token_seconds_count 1\n"), std::string::npos);
  // Every sample line belongs to a family declared by a TYPE line before it.
  std::istringstream in(out);
  std::string line, family;
  int n_types = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      ++n_types;
    } else if (line.rfind("#", 0) != 0) {
      EXPECT_EQ(line.rfind(family, 0), 0u) << line << " outside " << family;
    }
  }
  EXPECT_GE(n_types, 20);
}

// The vLLM names routers and dashboards read, with vLLM's model_name label and its units (KV usage
// a fraction; cache_config_info's labels).
TEST(Metrics, VllmNamesCarryTheSameFigures) {
  Metrics m;
  m.add_tokens(40, 9, 30);
  m.observe_ttft(0.02);
  EngineSnapshot e;
  e.n_waiting = 3;
  e.n_running = 2;
  e.kv_blocks_total = 200;
  e.kv_blocks_used = 50;
  e.kv_blocks_free = 150;
  e.block_size = 16;
  e.model_name = "qwen\"3";
  const std::string out = m.render(e, true);
  const std::string label = "{model_name=\"qwen\\\"3\"}";
  for (const std::string& want :
       {"vllm:num_requests_waiting" + label + " 3\n", "vllm:num_requests_running" + label + " 2\n",
        "vllm:kv_cache_usage_perc" + label + " 0.25\n", "vllm:gpu_cache_usage_perc" + label + " 0.25\n",
        std::string("vllm:cache_config_info{model_name=\"qwen\\\"3\",block_size=\"16\",num_gpu_blocks=\"200\"} 1\n"),
        "vllm:prompt_tokens_total" + label + " 40\n", "vllm:generation_tokens_total" + label + " 9\n",
        "vllm:prefix_cache_queries_total" + label + " 40\n", "vllm:prefix_cache_hits_total" + label + " 30\n",
        std::string("vllm:time_to_first_token_seconds_bucket{model_name=\"qwen\\\"3\",le=\"0.025\"} 1\n"),
        "vllm:time_to_first_token_seconds_count" + label + " 1\n"}) {
    EXPECT_NE(out.find(want), std::string::npos) << want;
  }
}

TEST(OpenAiResponse, SseFramingAndInvalidUtf8) {
  const std::string ev = sse_event(nlohmann::json{{"text", std::string("a\xff")}});
  EXPECT_EQ(ev.rfind("data: {", 0), 0u);
  EXPECT_EQ(ev.substr(ev.size() - 2), "\n\n");
  EXPECT_EQ(ev.find('\n'), ev.size() - 2);  // one line per event
  EXPECT_NE(ev.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD, not an exception
}

TEST(OpenAiResponse, UsageCountsTotal) {
  const auto u = usage_json({7, 5, 4});
  EXPECT_EQ(u["total_tokens"], 12);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 4);
}

}  // namespace
}  // namespace ridge::server
