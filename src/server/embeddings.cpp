// POST /v1/embeddings: every input is one engine request of an embedding engine
// (EngineOptions::pooling); they are submitted together and batched by the engine like any
// other prompts. OpenAI's shapes: input as a string, strings, token ids or lists of token ids;
// encoding_format float or base64; dimensions (truncated, then normalised again).
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "base/timer.h"
#include "server/generation.h"
#include "server/json_fields.h"

namespace ridge::server {

using json = nlohmann::ordered_json;

namespace {

constexpr size_t kMaxInputs = 2048;
constexpr double kPollSeconds = 0.05;

struct EmbeddingSpec {
  std::vector<std::vector<int32_t>> inputs;
  bool base64 = false;
  int32_t dimensions = 0;  // 0: the model's width
};

std::optional<ApiError> token_list(const json& v, const std::string& where, int32_t n_vocab,
                                   std::vector<int32_t>& out) {
  for (const json& t : v) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab) {
      return invalid_param("input", fmt::format("'{}' must hold token ids in [0, {})", where,
                                                n_vocab));
    }
    out.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_input(const json& input, const tokenizer::Tokenizer& tok,
                                    EmbeddingSpec& out) {
  auto text = [&](const json& s) {
    // Input text is text: special-token text in it stays text.
    out.inputs.push_back(tok.encode(s.get<std::string>(), /*add_special=*/true,
                                    /*parse_special=*/false));
  };
  if (input.is_string()) {
    text(input);
  } else if (!input.is_array() || input.empty()) {
    return invalid_param("input", "'input' must be a string, an array of strings, an array of "
                                  "token ids or an array of token-id arrays (not empty)");
  } else if (input[0].is_number()) {
    out.inputs.emplace_back();
    if (auto e = token_list(input, "input", tok.n_vocab(), out.inputs.back())) return e;
  } else {
    if (input.size() > kMaxInputs) {
      return invalid_param("input", fmt::format("'input' has {} entries, at most {} are allowed",
                                                input.size(), kMaxInputs));
    }
    for (size_t i = 0; i < input.size(); ++i) {
      const json& x = input[i];
      const std::string w = fmt::format("input[{}]", i);
      if (x.is_string()) {
        text(x);
      } else if (x.is_array() && !x.empty()) {
        out.inputs.emplace_back();
        if (auto e = token_list(x, w, tok.n_vocab(), out.inputs.back())) return e;
      } else {
        return invalid_param("input", fmt::format("'{}' must be a string or a non-empty array "
                                                  "of token ids", w));
      }
    }
  }
  for (size_t i = 0; i < out.inputs.size(); ++i) {
    if (out.inputs[i].empty()) return invalid_param("input", fmt::format("input {} is empty", i));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_embedding_request(const json& body, const ModelContext& m,
                                                EmbeddingSpec& out) {
  for (const auto& [key, value] : body.items()) {
    if (key == "input" || key == "model" || key == "encoding_format" || key == "dimensions" ||
        key == "user") {
      continue;
    }
    return invalid_param(key, fmt::format("Unrecognized request argument supplied: {}", key));
  }
  if (const json* model = json_field(body, "model");
      model && (!model->is_string() || *model != m.model_id)) {
    ApiError e = not_found(fmt::format("The model '{}' does not exist (this server serves '{}')",
                                       model->dump(), m.model_id), "model_not_found");
    e.param = "model";
    return e;
  }
  if (const json* f = json_field(body, "encoding_format")) {
    if (*f != "float" && *f != "base64") {
      return invalid_param("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
    }
    out.base64 = *f == "base64";
  }
  if (const json* d = json_field(body, "dimensions")) {
    if (!d->is_number_integer() || d->get<int64_t>() < 1 || d->get<int64_t>() > m.n_embd) {
      return invalid_param("dimensions", fmt::format("'dimensions' must be an integer in [1, {}]",
                                                     m.n_embd));
    }
    out.dimensions = static_cast<int32_t>(d->get<int64_t>());
  }
  const json* input = json_field(body, "input");
  if (!input) return invalid_param("input", "'input' is required");
  if (auto e = parse_input(*input, *m.tokenizer, out)) return e;
  for (size_t i = 0; i < out.inputs.size(); ++i) {
    if (static_cast<int64_t>(out.inputs[i].size()) > m.max_model_len) {
      ApiError e = invalid_param("input", fmt::format("input {} has {} tokens; this model's "
                                                      "context (max-model-len) is {} tokens", i,
                                                      out.inputs[i].size(), m.max_model_len));
      e.code = "context_length_exceeded";
      return e;
    }
  }
  return std::nullopt;
}

std::string base64_of_floats(const std::vector<float>& v) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian float32, as OpenAI's
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t w = 0;
    for (size_t k = 0; k < 3; ++k) {
      w = (w << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) {
      out += k <= n ? kAlphabet[(w >> (18 - 6 * k)) & 63] : '=';
    }
  }
  return out;
}

// The first `dims` values, normalised again (OpenAI's `dimensions`).
std::vector<float> shortened(std::vector<float> v, int32_t dims) {
  if (dims <= 0 || dims >= static_cast<int32_t>(v.size())) return v;
  v.resize(static_cast<size_t>(dims));
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  if (norm > 0) {
    const auto inv = static_cast<float>(1.0 / std::sqrt(norm));
    for (float& x : v) x *= inv;
  }
  return v;
}

}  // namespace

void Server::handle_embeddings(const http::Request& req, http::Exchange& ex) {
  auto fail = [&](const ApiError& e) { ex.respond(error_response(e)); };
  if (auto e = check_key(req)) return fail(*e);
  auto m = model();
  if (!m) return fail(unavailable("the model is still loading"));
  if (draining_) return fail(unavailable("the server is shutting down"));
  if (!m->embeddings) {
    return fail(invalid_param("", "this server runs a generation model; serve an embedding "
                                  "model with `ridge serve --embeddings`"));
  }
  json body;
  if (auto e = parse_json_object(req.body, body)) return fail(*e);
  EmbeddingSpec spec;
  if (auto e = parse_embedding_request(body, *m, spec)) return fail(*e);
  const auto n = static_cast<int64_t>(spec.inputs.size());
  if (auto e = reserve_seqs(*m, n)) return fail(*e);
  n_requests_.fetch_add(1);
  struct Held {  // places in the queue and the in-flight count, given back on every path
    std::atomic<int64_t>* seqs;
    std::atomic<int64_t>* requests;
    int64_t n;
    ~Held() {
      seqs->fetch_sub(n);
      requests->fetch_sub(1);
    }
  } held{&n_seqs_, &n_requests_, n};

  auto channel = std::make_shared<OutputChannel>();
  std::vector<engine::RequestId> ids;
  auto abort_all = [&] {
    for (engine::RequestId id : ids) m->engine->abort(id);
  };
  int64_t prompt_tokens = 0;
  for (int32_t i = 0; i < static_cast<int32_t>(n); ++i) {
    engine::Request r;
    r.prompt_tokens = spec.inputs[static_cast<size_t>(i)];
    prompt_tokens += static_cast<int64_t>(r.prompt_tokens.size());
    r.on_output = [channel, i](const engine::RequestOutput& o) { channel->push(i, o); };
    auto id = m->engine->add_request(std::move(r));
    if (!id.ok()) {
      abort_all();
      return fail(id.status().is_usage() ? invalid_param("input", id.status().message())
                                          : unavailable(id.status().message()));
    }
    ids.push_back(*id);
  }
  std::vector<std::vector<float>> vectors(static_cast<size_t>(n));
  const double deadline = opts_.request_timeout_s > 0 ? now_seconds() + opts_.request_timeout_s : 0;
  int64_t n_done = 0;
  std::vector<OutputChannel::Event> events;
  while (n_done < n) {
    events.clear();
    channel->take(events, kPollSeconds);
    for (auto& e : events) {
      if (!e.out.finished()) continue;
      ++n_done;
      if (e.out.finish != engine::FinishReason::kStop) {
        abort_all();
        return fail(e.out.finish == engine::FinishReason::kAbort
                        ? unavailable("the server shut down before the request finished")
                        : server_error("the engine could not embed the input: " + e.out.error));
      }
      vectors[static_cast<size_t>(e.choice)] = std::move(e.out.embedding);
    }
    if (ex.client_gone()) {
      abort_all();
      return ex.set_outcome(499);
    }
    if (deadline > 0 && now_seconds() > deadline && n_done < n) {
      abort_all();
      return fail(http_error(408, "the request did not finish within the server's timeout"));
    }
  }
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    std::vector<float> v = shortened(std::move(vectors[i]), spec.dimensions);
    json item = {{"object", "embedding"}, {"index", i}};
    if (spec.base64) {
      item["embedding"] = base64_of_floats(v);
    } else {
      item["embedding"] = std::move(v);
    }
    data.push_back(std::move(item));
  }
  metrics_.add_tokens(prompt_tokens, 0, 0);
  http::Response res;
  res.body = dump_json(nlohmann::json({{"object", "list"},
                                       {"data", nlohmann::json(data)},
                                       {"model", m->model_id},
                                       {"usage", {{"prompt_tokens", prompt_tokens},
                                                  {"total_tokens", prompt_tokens}}}}));
  ex.respond(std::move(res));
}

}  // namespace ridge::server
