// /tokenize, /detokenize and /apply-template. Request text is tokenized as text unless the
// client asks for special-token parsing (parse_special), and both answers are capped
// (max_tokenize_tokens).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "server/api_error.h"
#include "server/openai_response.h"
#include "server/server.h"

namespace ridge::server {

using nlohmann::json;

int64_t Server::max_tokenize_tokens(const ModelContext& m) const {
  if (opts_.max_tokenize_tokens > 0) return opts_.max_tokenize_tokens;
  return std::max<int64_t>(m.max_model_len, 131072);
}

void Server::handle_tokenize(const http::Request& req, http::Exchange& ex) {
  auto fail = [&](const ApiError& e) { ex.respond(error_response(e)); };
  if (auto e = check_key(req)) return fail(*e);
  auto m = model();
  if (!m) return fail(unavailable("the model is still loading"));
  json body;
  if (auto e = parse_json_object(req.body, body)) return fail(*e);
  bool add_special = true;
  bool parse_special = false;
  std::string text;
  for (const auto& [key, value] : body.items()) {
    if (key == "model") {
      if (!value.is_string() || value.get<std::string>() != m->model_id) {
        ApiError e = not_found("unknown model", "model_not_found");
        e.param = "model";
        return fail(e);
      }
    } else if (key == "prompt" || key == "content") {
      if (!value.is_string()) return fail(invalid_param(key, fmt::format("'{}' must be a string", key)));
      text = value.get<std::string>();
    } else if (key == "add_special_tokens" || key == "add_special") {
      if (!value.is_boolean()) return fail(invalid_param(key, fmt::format("'{}' must be a boolean", key)));
      add_special = value.get<bool>();
    } else if (key == "parse_special") {
      if (!value.is_boolean()) return fail(invalid_param(key, "'parse_special' must be a boolean"));
      parse_special = value.get<bool>();
    } else {
      return fail(invalid_param(key, fmt::format("Unrecognized request argument supplied: {}", key)));
    }
  }
  if (!body.contains("prompt") && !body.contains("content")) {
    return fail(invalid_param("prompt", "'prompt' is required"));
  }
  const auto tokens = m->tokenizer->encode(text, add_special, parse_special);
  const int64_t cap = max_tokenize_tokens(*m);
  if (static_cast<int64_t>(tokens.size()) > cap) {
    return fail(invalid_param(body.contains("prompt") ? "prompt" : "content",
                              fmt::format("the text is {} tokens; /tokenize returns at most {}",
                                          tokens.size(), cap)));
  }
  http::Response res;
  res.body = dump_json({{"tokens", tokens},
                        {"count", tokens.size()},
                        {"max_model_len", m->max_model_len}});
  ex.respond(std::move(res));
}

// The prompt a chat request would get (messages, tools, chat_template_kwargs), without
// generating: {"prompt": "..."} (llama.cpp's server has the same route).
void Server::handle_apply_template(const http::Request& req, http::Exchange& ex) {
  auto fail = [&](const ApiError& e) { ex.respond(error_response(e)); };
  if (auto e = check_key(req)) return fail(*e);
  auto m = model();
  if (!m) return fail(unavailable("the model is still loading"));
  nlohmann::ordered_json body;
  if (auto e = parse_json_object(req.body, body)) return fail(*e);
  GenerationSpec spec;
  if (auto e = parse_generation_request(body, Endpoint::kChat, opts_.limits, 0, spec)) {
    return fail(*e);
  }
  if (!m->render_chat) return fail(invalid_param("messages", "this model has no chat template"));
  auto rendered = m->render_chat(spec.chat.conversation);
  if (!rendered.ok()) return fail(invalid_param("messages", rendered.status().message()));
  http::Response res;
  res.body = dump_json({{"prompt", rendered->text.text}});
  ex.respond(std::move(res));
}

void Server::handle_detokenize(const http::Request& req, http::Exchange& ex) {
  auto fail = [&](const ApiError& e) { ex.respond(error_response(e)); };
  if (auto e = check_key(req)) return fail(*e);
  auto m = model();
  if (!m) return fail(unavailable("the model is still loading"));
  json body;
  if (auto e = parse_json_object(req.body, body)) return fail(*e);
  auto it = body.find("tokens");
  if (it == body.end() || !it->is_array()) return fail(invalid_param("tokens", "'tokens' must be an array of token ids"));
  if (static_cast<int64_t>(it->size()) > max_tokenize_tokens(*m)) {
    return fail(invalid_param("tokens", fmt::format("'tokens' has {} ids; /detokenize takes at most {}",
                                                    it->size(), max_tokenize_tokens(*m))));
  }
  std::vector<int32_t> ids;
  for (const json& t : *it) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= m->tokenizer->n_vocab()) {
      return fail(invalid_param("tokens", fmt::format("'tokens' entries must be token ids in [0, {})",
                                                      m->tokenizer->n_vocab())));
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  for (const auto& [key, value] : body.items()) {
    if (key != "tokens" && key != "model") {
      return fail(invalid_param(key, fmt::format("Unrecognized request argument supplied: {}", key)));
    }
  }
  http::Response res;
  res.body = dump_json({{"prompt", m->tokenizer->decode(ids)}});
  ex.respond(std::move(res));
}

}  // namespace ridge::server
