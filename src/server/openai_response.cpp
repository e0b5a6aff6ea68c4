#include "server/openai_response.h"

#include <utility>

namespace ridge::server {

using nlohmann::json;

std::string finish_reason_text(engine::FinishReason r) {
  switch (r) {
    case engine::FinishReason::kStop: return "stop";
    case engine::FinishReason::kLength: return "length";
    case engine::FinishReason::kAbort: return "abort";
    case engine::FinishReason::kError: return "error";
    case engine::FinishReason::kNone: break;
  }
  return "";
}

std::string finish_reason_text(engine::FinishReason r, bool called_tools) {
  return r == engine::FinishReason::kStop && called_tools ? "tool_calls" : finish_reason_text(r);
}

json usage_json(const Usage& u) {
  json j = {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
  if (u.prediction) {
    j["completion_tokens_details"] = {{"accepted_prediction_tokens", u.accepted_prediction_tokens},
                                      {"rejected_prediction_tokens", u.rejected_prediction_tokens}};
  }
  return j;
}

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

json chat_logprobs(const std::vector<sampling::SampleResult>& lp, const tokenizer::Tokenizer& tok) {
  json content = json::array();
  for (const auto& r : lp) {
    const std::string piece = tok.token_to_piece(r.token);
    json top = json::array();
    for (const auto& t : r.top) {
      const std::string p = tok.token_to_piece(t.token);
      top.push_back({{"token", p}, {"logprob", t.logprob}, {"bytes", bytes_of(p)}});
    }
    content.push_back({{"token", piece},
                       {"logprob", r.logprob},
                       {"bytes", bytes_of(piece)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

json completion_logprobs(const std::vector<sampling::SampleResult>& lp,
                         const tokenizer::Tokenizer& tok, size_t text_offset) {
  json tokens = json::array(), token_lp = json::array(), top = json::array(),
       offsets = json::array();
  for (const auto& r : lp) {
    const std::string piece = tok.token_to_piece(r.token);
    tokens.push_back(piece);
    token_lp.push_back(r.logprob);
    json alts = json::object();
    for (const auto& t : r.top) alts[tok.token_to_piece(t.token)] = t.logprob;
    top.push_back(std::move(alts));
    offsets.push_back(text_offset);
    text_offset += piece.size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_lp)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

const char* object_name(Endpoint e, bool chunk) {
  if (e == Endpoint::kChat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

json base_object(const ResponseIds& ids, bool chunk) {
  return {{"id", ids.id},
          {"object", object_name(ids.endpoint, chunk)},
          {"created", ids.created},
          {"model", ids.model},
          {"system_fingerprint", "ridge-0.1.0"}};
}

json finish_value(engine::FinishReason r, bool called_tools = false) {
  return r == engine::FinishReason::kNone ? json(nullptr)
                                          : json(finish_reason_text(r, called_tools));
}

json tool_calls_json(const std::vector<chat::ToolCall>& calls) {
  json arr = json::array();
  for (const auto& c : calls) {
    arr.push_back({{"id", c.id},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return arr;
}

// The assistant message of a finished chat choice.
json chat_message_json(const chat::ParsedOutput& p) {
  json m = {{"role", "assistant"}};
  const bool calls = !p.tool_calls.empty();
  m["content"] = calls && p.content.empty() ? json(nullptr) : json(p.content);
  if (!p.reasoning_content.empty()) m["reasoning_content"] = p.reasoning_content;
  if (calls) m["tool_calls"] = tool_calls_json(p.tool_calls);
  return m;
}

}  // namespace

json logprobs_json(Endpoint endpoint, const std::vector<sampling::SampleResult>& lp,
                   const tokenizer::Tokenizer& tok, size_t text_offset) {
  return endpoint == Endpoint::kChat ? chat_logprobs(lp, tok)
                                     : completion_logprobs(lp, tok, text_offset);
}

json completion_json(const ResponseIds& ids, const std::vector<ChoiceResult>& choices,
                     const Usage& usage, bool with_logprobs, const tokenizer::Tokenizer& tok,
                     const std::string& prefix) {
  json out = base_object(ids, false);
  json arr = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    const bool chat = ids.endpoint == Endpoint::kChat;
    json ch = {{"index", i},
               {"finish_reason", finish_value(c.finish, chat && !c.parsed.tool_calls.empty())}};
    ch["logprobs"] = with_logprobs ? logprobs_json(ids.endpoint, c.logprobs, tok, prefix.size())
                                   : json(nullptr);
    if (chat) {
      ch["message"] = chat_message_json(c.parsed);
    } else {
      ch["text"] = prefix + c.text;
    }
    arr.push_back(std::move(ch));
  }
  out["choices"] = std::move(arr);
  out["usage"] = usage_json(usage);
  return out;
}

json chunk_json(const ResponseIds& ids, int32_t index, const std::string& text,
                const json& logprobs, engine::FinishReason finish, bool include_usage) {
  json out = base_object(ids, true);
  json ch = {{"index", index}, {"text", text}, {"logprobs", logprobs},
             {"finish_reason", finish_value(finish)}};
  out["choices"] = json::array({std::move(ch)});
  if (include_usage) out["usage"] = nullptr;
  return out;
}

json chat_chunk_json(const ResponseIds& ids, int32_t index, const chat::OutputDelta& d,
                     const json& logprobs, const std::string& finish, bool role_chunk,
                     bool include_usage) {
  json out = base_object(ids, true);
  json delta = json::object();
  if (role_chunk) delta["role"] = "assistant";
  if (role_chunk || !d.content.empty()) delta["content"] = d.content;
  if (!d.reasoning_content.empty()) delta["reasoning_content"] = d.reasoning_content;
  if (!d.tool_calls.empty()) {
    // OpenAI's form: id, type and name in a call's first delta only, then argument fragments;
    // one entry per call in a chunk (fragments that follow a call's entry are joined to it).
    json calls = json::array();
    for (const auto& c : d.tool_calls) {
      if (!calls.empty() && calls.back()["index"] == c.index && c.id.empty() && c.name.empty()) {
        calls.back()["function"]["arguments"].get_ref<std::string&>() += c.arguments_fragment;
        continue;
      }
      json call = {{"index", c.index}};
      json fn = json::object();
      if (!c.id.empty()) {
        call["id"] = c.id;
        call["type"] = "function";
      }
      if (!c.name.empty()) fn["name"] = c.name;
      fn["arguments"] = c.arguments_fragment;
      call["function"] = std::move(fn);
      calls.push_back(std::move(call));
    }
    delta["tool_calls"] = std::move(calls);
  }
  json ch = {{"index", index}, {"delta", std::move(delta)}, {"logprobs", logprobs},
             {"finish_reason", finish.empty() ? json(nullptr) : json(finish)}};
  out["choices"] = json::array({std::move(ch)});
  if (include_usage) out["usage"] = nullptr;
  return out;
}

json usage_chunk_json(const ResponseIds& ids, const Usage& usage) {
  json out = base_object(ids, true);
  out["choices"] = json::array();
  out["usage"] = usage_json(usage);
  return out;
}

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

}  // namespace ridge::server
