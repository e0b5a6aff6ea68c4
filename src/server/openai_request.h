// Parsing and validation of OpenAI request bodies (/v1/chat/completions, /v1/completions).
//
// Strict by design: a wrong type, an out-of-range value or an unknown top-level field is a 400
// naming the field (OpenAI rejects unrecognized arguments too), never silently clamped. OpenAI
// fields that change nothing about the answer (store, metadata, service_tier, ...) are accepted
// and reported in `ignored_fields` for the server to log; fields whose meaning ridge cannot
// honour (audio, web_search_options, ...) are a 400. Fields ridge understands beyond OpenAI's:
// top_k, min_p, repetition_penalty, ignore_eos, priority, grammar, chat_template_kwargs.
// `prediction` (Predicted Outputs) drafts tokens for speculative verification: faster where
// the output follows it, never a different output.
// docs/server.md lists every field.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sampling/params.h"
#include "server/api_error.h"
#include "server/chat_request.h"

namespace ridge::server {

enum class Endpoint { kChat, kCompletion };

// Limits the parser checks that do not need the model.
struct RequestLimits {
  int32_t max_n = 16;           // choices per request
  int32_t max_stop = 4;         // stop strings (OpenAI: up to 4)
  int32_t max_top_logprobs = 20;
};

struct GenerationSpec {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;                  // "" when absent
  ChatOptions chat;                   // chat: messages, tools, template variables
  OutputConstraint constraint;        // response_format / grammar
  std::string prompt_text;            // completion with a string prompt
  std::vector<int32_t> prompt_tokens; // completion with a token-id prompt
  bool prompt_is_tokens = false;
  sampling::SamplingParams params;    // max_tokens -1 when absent (the server fills it)
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int32_t n_logprobs = -1;     // -1: none; >= 0: sampled token + this many alternatives
  bool echo = false;           // completion: prompt text prepended to the choice
  bool ignore_eos = false;
  int32_t priority = 0;
  std::string prediction;      // Predicted Outputs: the text the client expects (drafts only)
  std::string user;
  std::vector<std::string> ignored_fields;  // accepted without effect (the server logs them)
};

// Parses a request body already decoded as JSON. On failure returns the error (400 naming the
// field); `seed_if_absent` is used when the body has no seed.
std::optional<ApiError> parse_generation_request(const nlohmann::ordered_json& body, Endpoint endpoint,
                                                 const RequestLimits& limits,
                                                 uint64_t seed_if_absent, GenerationSpec& out);

// Parses raw bytes as a JSON object; the error names the position of a syntax error.
std::optional<ApiError> parse_json_object(const std::string& text, nlohmann::json& out);
std::optional<ApiError> parse_json_object(const std::string& text, nlohmann::ordered_json& out);

}  // namespace ridge::server
