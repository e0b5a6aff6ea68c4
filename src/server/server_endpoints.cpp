// The small endpoints: /v1/models, /tokenize, /detokenize.
#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_response.h"
#include "server/server.h"

namespace ridge::server {

using nlohmann::json;

void Server::handle_models(const httplib::Request& req, httplib::Response& res) {
  if (!authorized(req, res)) return metrics_.count_request("/v1/models", 401);
  auto m = model();
  json data = json::array();
  if (m) {
    data.push_back({{"id", m->model_id},
                    {"object", "model"},
                    {"created", m->created},
                    {"owned_by", "ridge"},
                    {"max_model_len", m->max_model_len}});
  }
  metrics_.count_request("/v1/models", 200);
  res.set_content(dump_json({{"object", "list"}, {"data", std::move(data)}}), "application/json");
}

void Server::handle_tokenize(const httplib::Request& req, httplib::Response& res) {
  auto fail = [&](const ApiError& e) {
    metrics_.count_request("/tokenize", e.status);
    send_error(res, e);
  };
  if (!authorized(req, res)) return metrics_.count_request("/tokenize", 401);
  auto m = model();
  if (!m) return fail(unavailable("the model is still loading"));
  json body;
  if (auto e = parse_json_object(req.body, body)) return fail(*e);
  bool add_special = true;
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
    } else {
      return fail(invalid_param(key, fmt::format("Unrecognized request argument supplied: {}", key)));
    }
  }
  if (!body.contains("prompt") && !body.contains("content")) {
    return fail(invalid_param("prompt", "'prompt' is required"));
  }
  const auto tokens = m->tokenizer->encode(text, add_special, true);
  metrics_.count_request("/tokenize", 200);
  res.set_content(dump_json({{"tokens", tokens},
                             {"count", tokens.size()},
                             {"max_model_len", m->max_model_len}}),
                  "application/json");
}

void Server::handle_detokenize(const httplib::Request& req, httplib::Response& res) {
  auto fail = [&](const ApiError& e) {
    metrics_.count_request("/detokenize", e.status);
    send_error(res, e);
  };
  if (!authorized(req, res)) return metrics_.count_request("/detokenize", 401);
  auto m = model();
  if (!m) return fail(unavailable("the model is still loading"));
  json body;
  if (auto e = parse_json_object(req.body, body)) return fail(*e);
  auto it = body.find("tokens");
  if (it == body.end() || !it->is_array()) return fail(invalid_param("tokens", "'tokens' must be an array of token ids"));
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
  metrics_.count_request("/detokenize", 200);
  res.set_content(dump_json({{"prompt", m->tokenizer->decode(ids)}}), "application/json");
}

}  // namespace ridge::server
