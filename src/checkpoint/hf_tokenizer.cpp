#include "checkpoint/hf_tokenizer.h"
#include "checkpoint/json_fields.h"

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

namespace ridge::checkpoint {
namespace {

using json = nlohmann::json;


// The split regexes of the pre-tokenizers ridge runs, as tokenizer.json spells them.
constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5's: Qwen2's with combining marks (\p{M}) in words and out of punctuation runs.
constexpr const char* kQwen35Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// o200k's (gpt-oss, GPT-4o: llama.cpp's "gpt-4o").
constexpr const char* kGpt4oSplit =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Every pre-tokenizer of the file, flattened out of Sequences.
void flatten(const json& p, std::vector<json>& out) {
  if (string_field(p, "type") == "Sequence" && p.contains("pretokenizers") && p["pretokenizers"].is_array()) {
    for (const json& q : p["pretokenizers"]) flatten(q, out);
  } else if (!p.is_null()) {
    out.push_back(p);
  }
}

Result<std::string> pre_tokenizer_name(const json& tok) {
  if (tok.contains("normalizer") && !tok["normalizer"].is_null()) {
    return error("tokenizer.json: a normalizer ({}) is not one convert knows", string_field(tok["normalizer"], "type", "?"));
  }
  std::vector<json> pres;
  if (tok.contains("pre_tokenizer")) flatten(tok["pre_tokenizer"], pres);
  std::string split;
  bool byte_level = false, byte_level_regex = false;
  for (const json& p : pres) {
    const std::string type = string_field(p, "type");
    if (type == "Split" && p.contains("pattern") && p["pattern"].is_object() && p["pattern"].contains("Regex") &&
        p["pattern"]["Regex"].is_string()) {
      if (!split.empty()) return error("tokenizer.json: more than one split regex");
      split = p["pattern"]["Regex"].get<std::string>();
    } else if (type == "ByteLevel") {
      byte_level = true;
      byte_level_regex = bool_field(p, "use_regex", true);
    } else {
      return error("tokenizer.json: pre-tokenizer '{}' is not one convert knows", type);
    }
  }
  if (!byte_level) return error("tokenizer.json: not a byte-level BPE tokenizer (no ByteLevel pre-tokenizer)");
  if (split == kQwen2Split && !byte_level_regex) return std::string("qwen2");
  if (split == kQwen35Split && !byte_level_regex) return std::string("qwen35");
  if (split == kLlama3Split && !byte_level_regex) return std::string("llama-bpe");
  if (split == kGpt4oSplit && !byte_level_regex) return std::string("gpt-4o");
  if (split.empty() && byte_level_regex) return std::string("gpt-2");
  return error("tokenizer.json: the split regex '{}' is not one convert knows (Qwen2's, Qwen3.5's, Llama 3's, o200k's, GPT-2's)",
               split.substr(0, 60));
}

// A special token's text in tokenizer_config.json: a string or {"content": ...}.
std::string token_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

}  // namespace

namespace {

Status convert_bpe(const HfTokenizerFiles& files, int64_t n_vocab, gguf::Writer& w);

}  // namespace

Status convert_tokenizer(const HfTokenizerFiles& files, int64_t n_vocab, gguf::Writer& w) {
  // Fields are read by their checked types; a shape nlohmann still refuses is the file's error.
  try {
    if (!files.tokenizer_model.empty()) return convert_sentencepiece(files, n_vocab, w);
    return convert_bpe(files, n_vocab, w);
  } catch (const nlohmann::json::exception& e) {
    return error("tokenizer files: malformed JSON field ({})", e.what());
  }
}

namespace {

Status convert_bpe(const HfTokenizerFiles& files, int64_t n_vocab, gguf::Writer& w) {
  const json tok = json::parse(files.tokenizer_json, nullptr, false);
  if (!tok.is_object()) return error("tokenizer.json: not a JSON object");
  if (!tok.contains("model") || string_field(tok["model"], "type") != "BPE") {
    return error("tokenizer.json: model type '{}' (convert reads BPE)",
                 tok.contains("model") ? string_field(tok["model"], "type", "?") : "?");
  }
  const json& model = tok["model"];
  RIDGE_ASSIGN_OR_RETURN(const std::string pre, pre_tokenizer_name(tok));
  if (!model.contains("vocab") || !model["vocab"].is_object()) return error("tokenizer.json: model.vocab is not an object");
  std::map<int64_t, std::pair<std::string, int32_t>> by_id;  // id -> text, type
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer()) return error("tokenizer.json: the id of '{}' is not an integer", text);
    by_id[id.get<int64_t>()] = {text, kTokenNormal};
  }
  RIDGE_ASSIGN_OR_RETURN(const std::vector<AddedToken> added, added_tokens_of(tok));
  for (const AddedToken& a : added) by_id[a.id] = {a.text, a.type};
  if (by_id.empty() || by_id.begin()->first < 0) return error("tokenizer.json: no tokens, or a negative id");
  // A GGUF's tokens are the embedding's rows (llama.cpp loads no other count).
  if (by_id.rbegin()->first >= n_vocab) {
    return error("tokenizer.json: token id {} past the model's {} embedding rows (vocab_size)", by_id.rbegin()->first,
                 n_vocab);
  }
  const int64_t n_tokens = n_vocab;
  if (n_tokens > (int64_t{1} << 24)) return error("tokenizer.json: {} tokens is too many", n_tokens);
  std::vector<std::string> tokens(static_cast<size_t>(n_tokens));
  std::vector<int32_t> types(static_cast<size_t>(n_tokens), kTokenUnused);
  std::map<std::string, int64_t> id_of;
  for (int64_t i = 0; i < n_tokens; ++i) tokens[static_cast<size_t>(i)] = "[PAD" + std::to_string(i) + "]";
  for (const auto& [id, t] : by_id) {
    tokens[static_cast<size_t>(id)] = t.first;
    types[static_cast<size_t>(id)] = t.second;
    id_of[t.first] = id;
  }
  std::vector<std::string> merges;
  if (model.contains("merges") && model["merges"].is_array()) {
    for (const json& m : model["merges"]) {
      if (m.is_string()) {
        merges.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      } else {
        return error("tokenizer.json: a merge that is neither \"a b\" nor [a, b]");
      }
    }
  }
  w.set("tokenizer.ggml.model", gguf::make_string("gpt2"));
  w.set("tokenizer.ggml.pre", gguf::make_string(pre));
  w.set("tokenizer.ggml.tokens", gguf::make_string_array(tokens));
  w.set("tokenizer.ggml.token_type", gguf::make_i32_array(types));
  w.set("tokenizer.ggml.merges", gguf::make_string_array(merges));
  return add_tokenizer_config(files, id_of, w);
}

}  // namespace

Status add_tokenizer_config(const HfTokenizerFiles& files, const std::map<std::string, int64_t>& id_of,
                            gguf::Writer& w) {
  json cfg = json::object();
  if (!files.tokenizer_config_json.empty()) {
    cfg = json::parse(files.tokenizer_config_json, nullptr, false);
    if (!cfg.is_object()) return error("tokenizer_config.json: not a JSON object");
  }
  const std::pair<const char*, const char*> kSpecial[] = {{"bos_token", "tokenizer.ggml.bos_token_id"},
                                                          {"eos_token", "tokenizer.ggml.eos_token_id"},
                                                          {"pad_token", "tokenizer.ggml.padding_token_id"},
                                                          {"unk_token", "tokenizer.ggml.unknown_token_id"}};
  for (const auto& [field, key] : kSpecial) {
    if (!cfg.contains(field) || cfg[field].is_null()) continue;
    const std::string text = token_text(cfg[field]);
    auto it = id_of.find(text);
    if (it == id_of.end()) return error("tokenizer_config.json: {} '{}' is not a token of tokenizer.json", field, text);
    w.set(key, gguf::make_u32(static_cast<uint32_t>(it->second)));
  }
  for (const char* add : {"add_bos_token", "add_eos_token"}) {
    if (cfg.contains(add) && cfg[add].is_boolean()) {
      w.set(std::string("tokenizer.ggml.") + add, gguf::make_bool(cfg[add].get<bool>()));
    }
  }
  std::string chat_template = files.chat_template;
  if (chat_template.empty() && cfg.contains("chat_template")) {
    const json& t = cfg["chat_template"];
    if (t.is_string()) {
      chat_template = t.get<std::string>();
    } else if (t.is_array()) {  // named templates: the default one
      for (const json& e : t) {
        if (string_field(e, "name") == "default" && e.contains("template") && e["template"].is_string()) {
          chat_template = e["template"].get<std::string>();
        }
      }
    }
  }
  if (!chat_template.empty()) w.set("tokenizer.chat_template", gguf::make_string(chat_template));
  return Status();
}

}  // namespace ridge::checkpoint
