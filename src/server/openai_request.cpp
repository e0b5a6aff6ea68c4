#include "server/openai_request.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <string_view>

#include "server/json_fields.h"

namespace ridge::server {

using json = nlohmann::ordered_json;

namespace {

constexpr std::array kChatKeys = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
    "min_p", "repetition_penalty", "seed", "stop", "n", "presence_penalty", "frequency_penalty",
    "logit_bias", "logprobs", "top_logprobs", "user", "stream", "stream_options", "ignore_eos",
    "priority", "tools", "tool_choice", "parallel_tool_calls", "chat_template_kwargs",
    "reasoning_effort", "response_format", "grammar", "regex", "prediction"};
constexpr std::array kCompletionKeys = {
    "model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "min_p",
    "repetition_penalty", "seed", "stop", "n", "presence_penalty", "frequency_penalty",
    "logit_bias", "logprobs", "user", "stream", "stream_options", "echo", "best_of", "ignore_eos",
    "priority", "response_format", "grammar", "regex", "prediction"};
// OpenAI fields that do not change the answer: accepted, reported, without effect.
constexpr std::array kIgnoredKeys = {"store", "metadata", "service_tier", "prompt_cache_key",
                                     "safety_identifier", "verbosity"};

std::optional<ApiError> get_number(const json& body, const char* key, double lo, double hi,
                                   bool lo_open, float& out) {
  const json* v = json_field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) return wrong_type(key, *v, "a number");
  const double x = v->get<double>();
  if (!std::isfinite(x) || x > hi || (lo_open ? x <= lo : x < lo)) {
    return invalid_param(key, fmt::format("'{}' = {} is outside {}{}, {}]", key, x,
                                          lo_open ? "(" : "[", lo, hi));
  }
  out = static_cast<float>(x);
  return std::nullopt;
}

std::optional<ApiError> get_int(const json& body, const char* key, int64_t lo, int64_t hi,
                                int64_t& out) {
  const json* v = json_field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) return wrong_type(key, *v, "an integer");
  const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)
                        ? INT64_MAX
                        : v->get<int64_t>();
  if (x < lo || x > hi) {
    return invalid_param(key, fmt::format("'{}' = {} is outside [{}, {}]", key, x, lo, hi));
  }
  out = x;
  return std::nullopt;
}

std::optional<ApiError> get_bool(const json& body, const char* key, bool& out) {
  const json* v = json_field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return wrong_type(key, *v, "a boolean");
  out = v->get<bool>();
  return std::nullopt;
}

template <size_t N>
bool one_of(const std::string& key, const std::array<const char*, N>& keys) {
  for (const char* k : keys) {
    if (key == k) return true;
  }
  return false;
}

std::optional<ApiError> check_keys(const json& body, Endpoint endpoint, GenerationSpec& out) {
  for (const auto& [key, value] : body.items()) {
    if (endpoint == Endpoint::kChat ? one_of(key, kChatKeys) : one_of(key, kCompletionKeys)) {
      continue;
    }
    if (one_of(key, kIgnoredKeys)) {
      out.ignored_fields.push_back(key);
      continue;
    }
    if (key == "modalities") {  // text is what ridge answers with; anything else it cannot
      if (!value.is_null() && value != json::array({"text"})) {
        return invalid_param(key, "'modalities' other than [\"text\"] is not supported");
      }
      continue;
    }
    if (key == "audio" || key == "web_search_options" || key == "functions" ||
        key == "function_call") {
      return invalid_param(key, fmt::format("'{}' is not supported{}", key,
                                            key.starts_with("function")
                                                ? " (use 'tools' and 'tool_choice')" : ""));
    }
    return invalid_param(key, fmt::format("Unrecognized request argument supplied: {}", key));
  }
  return std::nullopt;
}

// OpenAI's Predicted Outputs: {"type": "content", "content": "..." | [{"type": "text", "text":
// "..."}, ...]}; the parts are concatenated.
std::optional<ApiError> parse_prediction(const json& body, GenerationSpec& out) {
  const json* p = json_field(body, "prediction");
  if (!p) return std::nullopt;
  if (!p->is_object()) return wrong_type("prediction", *p, "an object");
  for (const auto& [key, value] : p->items()) {
    if (key != "type" && key != "content") {
      return invalid_param("prediction." + key, fmt::format("'prediction.{}' is not supported", key));
    }
  }
  const json* type = json_field(*p, "type");
  if (!type || *type != "content") return invalid_param("prediction.type", "'prediction.type' must be \"content\"");
  const json* content = json_field(*p, "content");
  if (!content) return invalid_param("prediction.content", "'prediction.content' is required");
  if (content->is_string()) {
    out.prediction = content->get<std::string>();
    return std::nullopt;
  }
  if (!content->is_array()) return wrong_type("prediction.content", *content, "a string or an array of text parts");
  for (const json& part : *content) {
    const json* text = part.is_object() ? json_field(part, "text") : nullptr;
    const json* part_type = part.is_object() ? json_field(part, "type") : nullptr;
    if (!text || !text->is_string() || !part_type || *part_type != "text" || part.size() != 2) {
      return invalid_param("prediction.content", "'prediction.content' parts must be {\"type\": \"text\", \"text\": \"...\"}");
    }
    out.prediction += text->get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> parse_prompt(const json& body, GenerationSpec& out) {
  const json* p = json_field(body, "prompt");
  if (!p) return invalid_param("prompt", "'prompt' is required");
  const json* one = p;
  if (p->is_array() && !p->empty() && !(*p)[0].is_number_integer()) {
    if (p->size() != 1) {
      return invalid_param("prompt", "only one prompt per request is supported");
    }
    one = &(*p)[0];
  }
  if (one->is_string()) {
    out.prompt_text = one->get<std::string>();
    return std::nullopt;
  }
  if (!one->is_array()) return wrong_type("prompt", *one, "a string or an array of token ids");
  if (one->empty()) return invalid_param("prompt", "'prompt' must not be empty");
  for (const json& t : *one) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      return invalid_param("prompt", "'prompt' token ids must be non-negative integers");
    }
    out.prompt_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  out.prompt_is_tokens = true;
  return std::nullopt;
}

std::optional<ApiError> parse_stop(const json& body, const RequestLimits& limits,
                                   GenerationSpec& out) {
  const json* s = json_field(body, "stop");
  if (!s) return std::nullopt;
  if (s->is_string()) {
    if (s->get<std::string>().empty()) return invalid_param("stop", "'stop' must not be empty");
    out.params.stop.push_back(s->get<std::string>());
    return std::nullopt;
  }
  if (!s->is_array()) return wrong_type("stop", *s, "a string or an array of strings");
  if (static_cast<int64_t>(s->size()) > limits.max_stop) {
    return invalid_param("stop", fmt::format("'stop' has {} strings, at most {} are allowed",
                                             s->size(), limits.max_stop));
  }
  for (const json& x : *s) {
    if (!x.is_string() || x.get<std::string>().empty()) {
      return invalid_param("stop", "'stop' entries must be non-empty strings");
    }
    out.params.stop.push_back(x.get<std::string>());
  }
  return std::nullopt;
}

std::optional<ApiError> parse_logit_bias(const json& body, GenerationSpec& out) {
  const json* b = json_field(body, "logit_bias");
  if (!b) return std::nullopt;
  if (!b->is_object()) return wrong_type("logit_bias", *b, "an object");
  for (const auto& [key, value] : b->items()) {
    int64_t id = -1;
    const auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || ptr != key.data() + key.size() || id < 0 || id > INT32_MAX) {
      return invalid_param("logit_bias",
                           fmt::format("'logit_bias' key '{}' is not a token id", key));
    }
    if (!value.is_number() || value.get<double>() < -100 || value.get<double>() > 100) {
      return invalid_param("logit_bias", fmt::format("'logit_bias[{}]' must be a number in "
                                                     "[-100, 100]", key));
    }
    out.params.logit_bias.emplace_back(static_cast<int32_t>(id), value.get<float>());
  }
  return std::nullopt;
}

std::optional<ApiError> parse_logprobs(const json& body, const RequestLimits& limits,
                                       GenerationSpec& out) {
  int64_t top = 0;
  if (out.endpoint == Endpoint::kChat) {
    bool want = false;
    if (auto e = get_bool(body, "logprobs", want)) return e;
    if (auto e = get_int(body, "top_logprobs", 0, limits.max_top_logprobs, top)) return e;
    if (json_field(body, "top_logprobs") && !want) {
      return invalid_param("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
    }
    if (want) out.n_logprobs = static_cast<int32_t>(top);
    return std::nullopt;
  }
  top = -1;
  if (auto e = get_int(body, "logprobs", 0, limits.max_top_logprobs, top)) return e;
  out.n_logprobs = static_cast<int32_t>(top);
  return std::nullopt;
}

std::optional<ApiError> parse_stream(const json& body, GenerationSpec& out) {
  if (auto e = get_bool(body, "stream", out.stream)) return e;
  const json* so = json_field(body, "stream_options");
  if (!so) return std::nullopt;
  if (!so->is_object()) return wrong_type("stream_options", *so, "an object");
  if (!out.stream) {
    return invalid_param("stream_options", "'stream_options' is only allowed with stream: true");
  }
  for (const auto& [key, value] : so->items()) {
    if (key != "include_usage") {
      return invalid_param("stream_options." + key,
                           fmt::format("'stream_options.{}' is not supported", key));
    }
    if (!value.is_boolean()) return wrong_type("stream_options.include_usage", value, "a boolean");
    out.include_usage = value.get<bool>();
  }
  return std::nullopt;
}

std::optional<ApiError> parse_sampling(const json& body, const RequestLimits& limits,
                                       uint64_t seed_if_absent, GenerationSpec& out) {
  // OpenAI's defaults (not llama.cpp's): no truncation unless asked for.
  auto& p = out.params;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.penalty_last_n = -1;
  if (auto e = get_number(body, "temperature", 0, 2, false, p.temperature)) return e;
  if (auto e = get_number(body, "top_p", 0, 1, true, p.top_p)) return e;
  if (auto e = get_number(body, "min_p", 0, 1, false, p.min_p)) return e;
  if (auto e = get_number(body, "presence_penalty", -2, 2, false, p.presence_penalty)) return e;
  if (auto e = get_number(body, "frequency_penalty", -2, 2, false, p.frequency_penalty)) return e;
  if (auto e = get_number(body, "repetition_penalty", 0, 10, true, p.repetition_penalty)) return e;
  int64_t v = 0;
  if (auto e = get_int(body, "top_k", 0, INT32_MAX, v)) return e;
  if (json_field(body, "top_k")) p.top_k = static_cast<int32_t>(v);
  v = -1;
  const char* max_key = json_field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (auto e = get_int(body, max_key, 1, INT32_MAX, v)) return e;
  p.max_tokens = static_cast<int32_t>(v);
  p.seed = seed_if_absent;
  if (const json* s = json_field(body, "seed")) {
    if (!s->is_number_integer()) return wrong_type("seed", *s, "an integer");
    p.seed = s->is_number_unsigned() ? s->get<uint64_t>() : static_cast<uint64_t>(s->get<int64_t>());
  }
  v = 1;
  if (auto e = get_int(body, "n", 1, limits.max_n, v)) return e;
  out.n = static_cast<int32_t>(v);
  if (auto e = parse_stop(body, limits, out)) return e;
  return parse_logit_bias(body, out);
}

}  // namespace

namespace {

template <typename Json>
std::optional<ApiError> parse_object(const std::string& text, Json& out) {
  try {
    out = Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return invalid_param("", fmt::format("request body is not valid JSON: {}", e.what()));
  } catch (const nlohmann::json::exception& e) {  // e.g. a number beyond a double's range (1e400)
    return invalid_param("", fmt::format("request body has a value ridge cannot represent: {}",
                                         e.what()));
  }
  if (!out.is_object()) return invalid_param("", "request body must be a JSON object");
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_json_object(const std::string& text, nlohmann::json& out) {
  return parse_object(text, out);
}

std::optional<ApiError> parse_json_object(const std::string& text, json& out) {
  return parse_object(text, out);
}

std::optional<ApiError> parse_generation_request(const json& body, Endpoint endpoint,
                                                 const RequestLimits& limits,
                                                 uint64_t seed_if_absent, GenerationSpec& out) {
  out = GenerationSpec{};
  out.endpoint = endpoint;
  if (auto e = check_keys(body, endpoint, out)) return e;
  if (const json* m = json_field(body, "model")) {
    if (!m->is_string()) return wrong_type("model", *m, "a string");
    out.model = m->get<std::string>();
  }
  if (endpoint == Endpoint::kChat) {
    if (auto e = parse_chat_options(body, out.chat)) return e;
  } else {
    if (auto e = parse_prompt(body, out)) return e;
    if (auto e = get_bool(body, "echo", out.echo)) return e;
  }
  if (auto e = parse_output_constraint(body, out.constraint)) return e;
  if (auto e = parse_prediction(body, out)) return e;
  if (auto e = parse_sampling(body, limits, seed_if_absent, out)) return e;
  if (endpoint == Endpoint::kCompletion) {
    int64_t best_of = out.n;
    if (auto e = get_int(body, "best_of", 1, limits.max_n, best_of)) return e;
    if (best_of != out.n) return invalid_param("best_of", "'best_of' other than n is not supported");
  }
  if (auto e = parse_logprobs(body, limits, out)) return e;
  if (auto e = parse_stream(body, out)) return e;
  if (auto e = get_bool(body, "ignore_eos", out.ignore_eos)) return e;
  int64_t prio = 0;
  if (auto e = get_int(body, "priority", INT32_MIN, INT32_MAX, prio)) return e;
  out.priority = static_cast<int32_t>(prio);
  if (const json* u = json_field(body, "user")) {
    if (!u->is_string()) return wrong_type("user", *u, "a string");
    out.user = u->get<std::string>();
  }
  return std::nullopt;
}

}  // namespace ridge::server
