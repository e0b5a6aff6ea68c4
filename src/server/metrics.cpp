#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>

namespace ridge::server {

namespace {

std::vector<double> latency_bounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <typename T>
void scalar(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            T value) {
  header(out, name, type, help);
  out += fmt::format("{} {}\n", name, value);
}

// Prometheus label values escape backslash, quote and newline.
std::string escape_label(std::string_view s) {
  std::string r;
  for (char c : s) {
    if (c == '\\' || c == '"') r += '\\';
    if (c == '\n') {
      r += "\\n";
      continue;
    }
    r += c;
  }
  return r;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double x) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), x);  // first bound >= x
  counts_[static_cast<size_t>(it - bounds_.begin())] += 1;
  count_ += 1;
  sum_ += x;
}

void Histogram::render(std::string_view name, std::string& out, std::string_view labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{{}le=\"{}\"}} {}\n", name, labels, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{{}le=\"+Inf\"}} {}\n", name, labels, count_);
  const std::string plain = labels.empty() ? "" : fmt::format("{{{}}}", labels.substr(0, labels.size() - 1));
  out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, plain, sum_, name, plain, count_);
}

Metrics::Metrics()
    : ttft_(latency_bounds()), inter_token_(latency_bounds()), e2e_(latency_bounds()),
      queue_(latency_bounds()) {}

void Metrics::count_request(std::string_view endpoint, int status) {
  std::lock_guard lock(mu_);
  requests_[{std::string(endpoint), status}] += 1;
}

void Metrics::add_tokens(int64_t n_prompt, int64_t n_generated, int64_t n_cached_prompt) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += static_cast<uint64_t>(std::max<int64_t>(n_prompt, 0));
  generated_tokens_ += static_cast<uint64_t>(std::max<int64_t>(n_generated, 0));
  cached_prompt_tokens_ += static_cast<uint64_t>(std::max<int64_t>(n_cached_prompt, 0));
}

void Metrics::observe_ttft(double s) { std::lock_guard lock(mu_); ttft_.observe(s); }
void Metrics::observe_inter_token(double s) { std::lock_guard lock(mu_); inter_token_.observe(s); }
void Metrics::observe_e2e(double s) { std::lock_guard lock(mu_); e2e_.observe(s); }
void Metrics::observe_queue(double s) { std::lock_guard lock(mu_); queue_.observe(s); }
void Metrics::set_in_flight(int64_t n) { std::lock_guard lock(mu_); in_flight_ = n; }
void Metrics::set_connections(const http::ConnectionStats& c) {
  std::lock_guard lock(mu_);
  connections_ = c;
}

std::string Metrics::render(const EngineSnapshot& e, bool ready) const {
  std::lock_guard lock(mu_);
  std::string out;
  header(out, "ridge_requests_total", "counter", "HTTP requests answered, by endpoint and status");
  for (const auto& [key, n] : requests_) {
    out += fmt::format("ridge_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n",
                       escape_label(key.first), key.second, n);
  }
  scalar(out, "ridge_ready", "gauge", "1 once the model is loaded and the server accepts work",
         ready ? 1 : 0);
  scalar(out, "ridge_http_requests_in_flight", "gauge", "generation requests being served",
         in_flight_);
  scalar(out, "ridge_http_connections_open", "gauge", "client connections open",
         connections_.open);
  scalar(out, "ridge_http_connections_total", "counter", "client connections accepted",
         connections_.accepted);
  scalar(out, "ridge_http_connections_evicted_total", "counter",
         "idle or slow-header connections closed to make room for new ones", connections_.evicted);
  scalar(out, "ridge_http_connections_refused_total", "counter",
         "connections refused with 503 at the connection limit", connections_.refused);
  scalar(out, "ridge_http_connections_timed_out_total", "counter",
         "connections closed by a header, request or keep-alive deadline", connections_.timed_out);
  scalar(out, "ridge_queue_depth", "gauge", "sequences waiting for their first schedule",
         e.n_waiting);
  scalar(out, "ridge_running_sequences", "gauge", "sequences in the running batch", e.n_running);
  scalar(out, "ridge_kv_blocks_total", "gauge", "KV cache blocks", e.kv_blocks_total);
  scalar(out, "ridge_kv_blocks_used", "gauge", "KV blocks referenced by live sequences",
         e.kv_blocks_used);
  scalar(out, "ridge_kv_blocks_free", "gauge", "KV blocks free or evictable", e.kv_blocks_free);
  if (e.kv_window_blocks_total > 0) {
    scalar(out, "ridge_kv_window_blocks_total", "gauge",
           "KV blocks of the sliding-window layers (kept only for their window)", e.kv_window_blocks_total);
    scalar(out, "ridge_kv_window_blocks_used", "gauge",
           "window KV blocks referenced by live sequences", e.kv_window_blocks_used);
  }
  scalar(out, "ridge_prefix_cache_hit_rate", "gauge",
         "prompt tokens served from the prefix cache / prompt tokens looked up",
         e.prefix_cache_hit_rate);
  scalar(out, "ridge_preemptions_total", "counter", "sequences preempted (KV freed, recomputed)",
         e.preemptions);
  scalar(out, "ridge_engine_steps_total", "counter", "engine steps run", e.steps);
  scalar(out, "ridge_spec_draft_tokens_total", "counter",
         "speculative decoding: draft tokens verified (serve --spec)", e.draft_tokens);
  scalar(out, "ridge_spec_accepted_tokens_total", "counter",
         "speculative decoding: draft tokens accepted", e.accepted_tokens);
  scalar(out, "ridge_state_snapshots_total", "counter",
         "hybrid models: recurrent states kept for the prefix cache", e.state_snapshots);
  scalar(out, "ridge_state_cache_hits_total", "counter",
         "hybrid models: prompts that started from a kept recurrent state", e.state_hits);
  scalar(out, "ridge_prompt_tokens_total", "counter", "prompt tokens of finished requests",
         prompt_tokens_);
  scalar(out, "ridge_cached_prompt_tokens_total", "counter",
         "prompt tokens whose KV came from the prefix cache", cached_prompt_tokens_);
  scalar(out, "ridge_generated_tokens_total", "counter", "completion tokens generated",
         generated_tokens_);
  scalar(out, "ridge_bytes_moved_total", "counter", "bytes the engine's steps moved (cost model)",
         e.bytes_moved);
  scalar(out, "ridge_engine_busy_seconds_total", "counter", "seconds spent in engine steps",
         e.busy_seconds);
  scalar(out, "ridge_achieved_gbps", "gauge", "achieved memory bandwidth of recent steps, GB/s",
         e.live_gbs);
  scalar(out, "ridge_probed_gbps", "gauge", "read bandwidth measured by ridge probe (0 = unknown)",
         e.probed_gbs);
  scalar(out, "ridge_roof_fraction", "gauge", "achieved / probed bandwidth (0 when unknown)",
         e.probed_gbs > 0 ? e.live_gbs / e.probed_gbs : 0.0);
  header(out, "ridge_time_to_first_token_seconds", "histogram", "arrival to first token");
  ttft_.render("ridge_time_to_first_token_seconds", out);
  header(out, "ridge_inter_token_latency_seconds", "histogram", "time between streamed tokens");
  inter_token_.render("ridge_inter_token_latency_seconds", out);
  header(out, "ridge_e2e_request_latency_seconds", "histogram", "arrival to finish");
  e2e_.render("ridge_e2e_request_latency_seconds", out);
  header(out, "ridge_queue_time_seconds", "histogram", "arrival to first schedule");
  queue_.render("ridge_queue_time_seconds", out);
  render_vllm_names(e, out);
  return out;
}

// The same figures under the names vLLM exports, with its model_name label, so that what reads
// vLLM's metrics reads ridge's unchanged: the Gateway API Inference Extension's endpoint picker
// (queue length, running requests, KV-cache usage as a fraction, block size and block count from
// cache_config_info), vLLM's production-stack router and its Grafana dashboards.
void Metrics::render_vllm_names(const EngineSnapshot& e, std::string& out) const {
  const std::string label = fmt::format("model_name=\"{}\"", escape_label(e.model_name));
  auto sample = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    header(out, name, type, help);
    out += fmt::format("{}{{{}}} {}\n", name, label, value);
  };
  const double usage = e.kv_blocks_total > 0 ? static_cast<double>(e.kv_blocks_used) / static_cast<double>(e.kv_blocks_total) : 0.0;
  sample("vllm:num_requests_waiting", "gauge", "requests waiting to be scheduled (ridge_queue_depth)", e.n_waiting);
  sample("vllm:num_requests_running", "gauge", "requests in the running batch (ridge_running_sequences)", e.n_running);
  sample("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage, 1 = full (ridge_kv_blocks_used / ridge_kv_blocks_total)", usage);
  sample("vllm:gpu_cache_usage_perc", "gauge", "KV-cache usage, 1 = full (the older vLLM name)", usage);
  header(out, "vllm:cache_config_info", "gauge", "KV cache configuration (block size in tokens, number of blocks)");
  out += fmt::format("vllm:cache_config_info{{{},block_size=\"{}\",num_gpu_blocks=\"{}\"}} 1\n", label, e.block_size,
                     e.kv_blocks_total);
  sample("vllm:num_preemptions_total", "counter", "sequences preempted (ridge_preemptions_total)", e.preemptions);
  sample("vllm:prompt_tokens_total", "counter", "prompt tokens of finished requests", prompt_tokens_);
  sample("vllm:generation_tokens_total", "counter", "completion tokens generated", generated_tokens_);
  sample("vllm:prefix_cache_queries_total", "counter", "prompt tokens looked up in the prefix cache", prompt_tokens_);
  sample("vllm:prefix_cache_hits_total", "counter", "prompt tokens served from the prefix cache", cached_prompt_tokens_);
  const std::string hl = label + ",";
  header(out, "vllm:time_to_first_token_seconds", "histogram", "arrival to first token");
  ttft_.render("vllm:time_to_first_token_seconds", out, hl);
  header(out, "vllm:inter_token_latency_seconds", "histogram", "time between streamed tokens");
  inter_token_.render("vllm:inter_token_latency_seconds", out, hl);
  header(out, "vllm:e2e_request_latency_seconds", "histogram", "arrival to finish");
  e2e_.render("vllm:e2e_request_latency_seconds", out, hl);
  header(out, "vllm:request_queue_time_seconds", "histogram", "arrival to first schedule");
  queue_.render("vllm:request_queue_time_seconds", out, hl);
}

}  // namespace ridge::server
