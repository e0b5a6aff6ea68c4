// One generation request between the HTTP thread and the engine: prompt preparation (chat
// template, tokenization, context checks), submission of its n choices, and the channel that
// carries their events from the engine thread back to the HTTP thread.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chat/output_parser.h"
#include "engine/engine.h"
#include "grammar/grammar.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/server.h"

namespace ridge::server {

struct PreparedRequest {
  GenerationSpec spec;
  std::vector<int32_t> prompt;  // token ids given to the engine
  std::string echo_prefix;      // completion echo: the prompt text
  bool starts_in_reasoning = false;  // chat: the prompt opened a reasoning block
  bool reasoning_closed = false;     // chat: the prompt closed an empty one (thinking off)
  std::shared_ptr<const grammar::Grammar> grammar;  // structured output (response_format, grammar)
  ResponseIds ids;
  double arrival = 0;           // now_seconds() when the request came in
};

// Parses the body and turns it into engine-ready tokens; every failure is a 4xx naming the field.
std::optional<ApiError> prepare_generation(const ModelContext& model, const std::string& body,
                                           Endpoint endpoint, const RequestLimits& limits,
                                           PreparedRequest& out);

// Events of one request's choices, pushed by the engine thread (never blocks beyond a short
// lock) and taken by the HTTP thread.
class OutputChannel {
 public:
  struct Event {
    int32_t choice = 0;
    engine::RequestOutput out;
    chat::OutputDelta delta;  // chat: what out.text adds to content / reasoning / tool calls
  };
  void push(int32_t choice, const engine::RequestOutput& out);
  // Moves every queued event into `events`, waiting up to timeout_s for the first one.
  void take(std::vector<Event>& events, double timeout_s);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> queue_;
};

class GenerationRun {
 public:
  // n_live_seqs counts unfinished choices (the server's queue limit). The caller has already
  // added this run's n choices to it; the run takes each one off as that choice ends (finished,
  // aborted or refused by the engine), its destructor at the latest.
  GenerationRun(std::shared_ptr<const ModelContext> model, PreparedRequest req,
                std::atomic<int64_t>* n_live_seqs);
  ~GenerationRun();  // aborts whatever has not finished
  GenerationRun(const GenerationRun&) = delete;
  GenerationRun& operator=(const GenerationRun&) = delete;

  // Submits choice 0; the other choices follow once its prompt is in the KV cache, so they take
  // the prompt's blocks from the prefix cache instead of computing them again.
  std::optional<ApiError> start();
  // Waits up to timeout_s, applies the events to the choices and returns them (chat events
  // with their parsed delta).
  std::vector<OutputChannel::Event> poll(double timeout_s);
  void abort_all();
  bool finished() const;

  const PreparedRequest& request() const { return req_; }
  const std::vector<ChoiceResult>& choices() const { return choices_; }
  Usage usage() const;
  // ridge's per-request timings (queue, TTFT, decode rate, bytes, bandwidth vs. the probe).
  nlohmann::json timings() const;

 private:
  std::optional<ApiError> submit(int32_t choice);
  void parse_event(OutputChannel::Event& e);

  std::shared_ptr<const ModelContext> model_;
  PreparedRequest req_;
  std::atomic<int64_t>* n_live_seqs_;
  std::shared_ptr<OutputChannel> channel_ = std::make_shared<OutputChannel>();
  std::vector<ChoiceResult> choices_;
  std::vector<engine::RequestId> ids_;   // 0 = not submitted
  std::vector<bool> done_;
  std::vector<std::unique_ptr<chat::OutputParser>> parsers_;  // chat only, one per choice
  engine::EngineStats start_stats_;
  mutable std::optional<engine::EngineStats> end_stats_;
};

}  // namespace ridge::server
