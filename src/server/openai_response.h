// Building OpenAI response objects: whole completions, streaming chunks (SSE), usage, logprobs,
// and ridge's own `timings` block.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "chat/output_parser.h"
#include "engine/request.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace ridge::server {

// Identity shared by every object of one response.
struct ResponseIds {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;     // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

// Everything one choice produced, accumulated from its events.
struct ChoiceResult {
  std::string text;             // everything generated (raw)
  chat::ParsedOutput parsed;    // chat: content / reasoning_content / tool_calls of `text`
  std::vector<int32_t> tokens;
  std::vector<sampling::SampleResult> logprobs;
  engine::FinishReason finish = engine::FinishReason::kNone;
  engine::RequestStats stats;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  // Predicted Outputs: draft tokens the output took / did not take (completion_tokens_details).
  bool prediction = false;
  int64_t accepted_prediction_tokens = 0;
  int64_t rejected_prediction_tokens = 0;
};

// "stop" / "length"; an aborted or failed choice reports "abort" / "error" (ridge extension).
std::string finish_reason_text(engine::FinishReason r);
// A chat choice that ended by itself after calling tools finishes with "tool_calls".
std::string finish_reason_text(engine::FinishReason r, bool called_tools);

nlohmann::json usage_json(const Usage& u);

// Logprobs of `lp` in the endpoint's format (chat: {"content": [...]}; completions: tokens,
// token_logprobs, top_logprobs, text_offset starting at `text_offset`).
nlohmann::json logprobs_json(Endpoint endpoint, const std::vector<sampling::SampleResult>& lp,
                             const tokenizer::Tokenizer& tok, size_t text_offset = 0);

// The non-streaming response. `prefix` (echo) is prepended to each completion choice's text.
nlohmann::json completion_json(const ResponseIds& ids, const std::vector<ChoiceResult>& choices,
                               const Usage& usage, bool with_logprobs,
                               const tokenizer::Tokenizer& tok, const std::string& prefix);

// One streaming chunk of a completion choice. finish != kNone: the closing chunk of the choice.
// include_usage adds "usage": null.
nlohmann::json chunk_json(const ResponseIds& ids, int32_t index, const std::string& text,
                          const nlohmann::json& logprobs, engine::FinishReason finish,
                          bool include_usage);
// One streaming chunk of a chat choice: `role_chunk` is the opening delta {"role": ...};
// `finish` is "" until the closing chunk.
nlohmann::json chat_chunk_json(const ResponseIds& ids, int32_t index,
                               const chat::OutputDelta& delta, const nlohmann::json& logprobs,
                               const std::string& finish, bool role_chunk, bool include_usage);
// The final usage-only chunk (stream_options.include_usage).
nlohmann::json usage_chunk_json(const ResponseIds& ids, const Usage& usage);

// SSE framing: "data: <json>\n\n"; invalid UTF-8 in strings is replaced, never thrown.
std::string sse_event(const nlohmann::json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";
// JSON text with invalid UTF-8 replaced by U+FFFD.
std::string dump_json(const nlohmann::json& j);

}  // namespace ridge::server
