// Server metrics in the Prometheus text exposition format (version 0.0.4).
//
// Counters and histograms are updated by HTTP threads (under one mutex: a handful of updates
// per request); gauges describing the engine are read from an EngineSnapshot at scrape time, so
// /metrics never waits for the engine thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/http/server.h"

namespace ridge::server {

// A cumulative histogram with fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double x);
  // Appends the _bucket/_sum/_count lines of metric `name` to out.
  // `labels`: "key=\"value\"," pairs written before each bucket's le (may be empty).
  void render(std::string_view name, std::string& out, std::string_view labels = "") const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is +Inf
  uint64_t count_ = 0;
  double sum_ = 0;
};

// Engine-side state at one instant (from the backend).
struct EngineSnapshot {
  int64_t n_waiting = 0;        // queued requests (sequences) not yet scheduled
  int64_t n_running = 0;        // sequences in the running batch
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_free = 0;   // free or evictable (cached, refcount 0)
  int64_t kv_blocks_used = 0;   // referenced by a live sequence
  int64_t kv_window_blocks_total = 0;  // the sliding-window layers' own pool (0: none)
  int64_t kv_window_blocks_used = 0;
  double prefix_cache_hit_rate = 0;  // prompt tokens served from cache / prompt tokens looked up
  int64_t preemptions = 0;
  int64_t draft_tokens = 0;     // speculative decoding: draft tokens verified
  int64_t accepted_tokens = 0;  // of them, accepted
  int64_t state_snapshots = 0;  // hybrid models: recurrent states kept for the prefix cache
  int64_t state_hits = 0;       // prompts that started from one
  double bytes_moved = 0;       // total over all steps (cost model)
  double busy_seconds = 0;      // time spent in steps
  double live_gbs = 0;          // achieved bandwidth over the recent steps
  double probed_gbs = 0;        // this machine's measured read bandwidth (0 = unknown)
  int64_t steps = 0;
  std::string model_name;       // the id clients use (the vLLM-named metrics' model_name label)
  int32_t block_size = 0;       // KV block size in tokens
};

class Metrics {
 public:
  Metrics();
  // `endpoint` is a route's path or "unmatched": the label set stays bounded whatever paths
  // clients send.
  void count_request(std::string_view endpoint, int status);
  void add_tokens(int64_t n_prompt, int64_t n_generated, int64_t n_cached_prompt);
  void observe_ttft(double s);
  void observe_inter_token(double s);
  void observe_e2e(double s);
  void observe_queue(double s);
  void set_in_flight(int64_t n);  // HTTP requests being served
  void set_connections(const http::ConnectionStats& c);
  // The full exposition text.
  std::string render(const EngineSnapshot& engine, bool ready) const;

 private:
  void render_vllm_names(const EngineSnapshot& e, std::string& out) const;  // under mu_
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (endpoint, status) -> count
  uint64_t prompt_tokens_ = 0;
  uint64_t generated_tokens_ = 0;
  uint64_t cached_prompt_tokens_ = 0;
  int64_t in_flight_ = 0;
  http::ConnectionStats connections_;
  Histogram ttft_;
  Histogram inter_token_;
  Histogram e2e_;
  Histogram queue_;
};

}  // namespace ridge::server
