// A chat request as a chat template sees it: OpenAI message objects (normalised by the caller),
// tool definitions, extra template variables (chat_template_kwargs) and whether to open the
// assistant's turn. Everything in it is request text: the template marks it literal.
#pragma once

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace ridge::chat {

struct Conversation {
  // [{role, content, name?, tool_calls?, tool_call_id?, reasoning_content?}, ...]; content is a
  // string (text parts joined), or null for an assistant turn that only calls tools. A tool
  // call's arguments are an object where the client's JSON text parses as one.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null, or the request's tools array
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // e.g. enable_thinking
  bool add_generation_prompt = true;
};

struct RenderedPrompt {
  tokenizer::MarkedText text;
  // The prompt ends inside an opened reasoning block ("<think>\n"): the model's first tokens are
  // reasoning.
  bool starts_in_reasoning = false;
  // The prompt ends with a closed, empty reasoning block ("<think>\n\n</think>\n\n": thinking
  // switched off): the model answers at once.
  bool reasoning_closed = false;
};

}  // namespace ridge::chat
