// Vocab::build: llama.cpp's interpretation of tokenizer metadata (defaults, overrides and the
// text-based detection of end-of-generation tokens), plus the encoder lookup tables.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace ridge::tokenizer {

namespace {

struct PreInfo {
  PreType type;
  bool ignore_merges;
  bool add_bos;
};

// Pre-tokenizer names llama.cpp maps to the regex sets implemented here.
std::optional<PreInfo> lookup_pre(std::string_view pre) {
  static constexpr std::string_view kLlama3[] = {"llama3", "llama-v3", "llama-bpe", "falcon3",
                                                 "pixtral", "midm-2.0", "lfm2"};
  static constexpr std::string_view kGpt2[] = {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat",
                                               "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
                                               "mpt", "olmo", "jais", "trillion", "exaone4"};
  static constexpr std::string_view kQwen2[] = {"qwen2", "deepseek-r1-qwen", "megrez",
                                                "stablelm2", "hunyuan"};
  static constexpr std::string_view kStarcoder[] = {"starcoder", "refact", "command-r", "smollm",
                                                    "codeshell", "exaone", "minerva-7b"};
  // o200k (gpt-oss, GPT-4o) and the vocabularies llama.cpp gives the very same regex.
  static constexpr std::string_view kGpt4o[] = {"gpt-4o", "llama4", "kanana2", "talkie",
                                                "minimax-m2"};
  auto in = [&](const auto& list) { return std::find(std::begin(list), std::end(list), pre) != std::end(list); };
  if (pre.empty() || pre == "default") return PreInfo{PreType::kDefault, false, false};
  if (in(kLlama3)) return PreInfo{PreType::kLlama3, true, true};
  if (in(kGpt2)) return PreInfo{PreType::kGpt2, false, false};
  if (in(kQwen2)) return PreInfo{PreType::kQwen2, false, false};
  if (pre == "qwen35") return PreInfo{PreType::kQwen35, false, false};  // Qwen3.5
  if (in(kStarcoder)) return PreInfo{PreType::kStarcoder, false, false};
  if (pre == "falcon") return PreInfo{PreType::kFalcon, false, false};
  if (in(kGpt4o)) return PreInfo{PreType::kGpt4o, false, false};
  if (pre == "gemma4" || pre == "granite-embed-multi-311m") return PreInfo{PreType::kGemma4, false, false};
  return std::nullopt;
}

uint32_t attr_from_type(int32_t t) {
  switch (t) {
    case 1: return kAttrNormal;
    case 2: return kAttrUnknown;
    case 3: return kAttrControl;
    case 4: return kAttrUserDefined;
    case 5: return kAttrUnused;
    case 6: return kAttrByte;
    default: return kAttrUndefined;
  }
}

// Texts llama.cpp treats as end of generation (and forces to control type).
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~[",
};
// EOT candidates in priority order (llama.cpp takes the first one its hash map yields).
constexpr std::string_view kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                          "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
                                          "<end_of_utterance>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                             "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "▁<PRE>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>", "▁<SUF>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>", "▁<MID>"};

// Resolves one special id: metadata wins when in range, else the default (if in range).
int32_t resolve_id(const std::optional<int64_t>& meta, int32_t fallback, int32_t n) {
  if (meta && *meta >= 0 && *meta < n) return static_cast<int32_t>(*meta);
  return (fallback >= 0 && fallback < n) ? fallback : -1;
}

// When metadata gave no id, finds the first listed text in the vocabulary and marks it control.
template <size_t N>
int32_t detect(Vocab& v, int32_t current, const std::string_view (&texts)[N]) {
  if (current >= 0) return current;
  for (auto t : texts) {
    const int32_t id = v.find(t);
    if (id >= 0) {
      v.attr[id] |= kAttrControl;
      return id;
    }
  }
  return -1;
}

Status build_tokens(Vocab& v, VocabData& d, std::string_view name) {
  const size_t n = d.tokens.size();
  if (n == 0) return error("{}: tokenizer.ggml.tokens is empty", name);
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2)) {
    return error("{}: tokenizer.ggml.tokens has {} entries, too many", name, n);
  }
  if (!d.scores.empty() && d.scores.size() < n) {
    return error("{}: tokenizer.ggml.scores has {} entries for {} tokens", name, d.scores.size(), n);
  }
  if (!d.token_types.empty() && d.token_types.size() < n) {
    return error("{}: tokenizer.ggml.token_type has {} entries for {} tokens", name,
                 d.token_types.size(), n);
  }
  v.text = std::move(d.tokens);
  v.score.assign(n, 0.0f);
  v.attr.assign(n, kAttrNormal);
  v.text_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (v.text[i].empty()) v.text[i] = "[EMPTY_" + std::to_string(i) + "]";
    auto [it, inserted] = v.text_to_id.emplace(v.text[i], static_cast<int32_t>(i));
    if (!inserted) {
      return error("{}: duplicate token '{}' in vocabulary (ids {} and {})", name, v.text[i],
                   it->second, i);
    }
    if (!d.scores.empty()) v.score[i] = d.scores[i];
    if (!d.token_types.empty()) v.attr[i] = attr_from_type(d.token_types[i]);
  }
  return ok_status();
}

void build_eog(Vocab& v, const VocabData& d) {
  const int32_t n = v.n_vocab();
  v.eot = detect(v, resolve_id(d.eot, -1, n), kEotTexts);
  v.eom = resolve_id(d.eom, -1, n);
  if (v.eom < 0) v.eom = v.find("<|eom_id|>");
  detect(v, resolve_id(d.fim_pre, -1, n), kFimPreTexts);
  detect(v, resolve_id(d.fim_suf, -1, n), kFimSufTexts);
  detect(v, resolve_id(d.fim_mid, -1, n), kFimMidTexts);
  std::vector<int32_t> eog;
  for (int32_t id : {detect(v, resolve_id(d.fim_pad, -1, n), kFimPadTexts),
                     detect(v, resolve_id(d.fim_rep, -1, n), kFimRepTexts),
                     detect(v, resolve_id(d.fim_sep, -1, n), kFimSepTexts)}) {
    if (id >= 0) eog.push_back(id);
  }
  for (auto t : kEogTexts) {
    const int32_t id = v.find(t);
    if (id < 0) continue;
    eog.push_back(id);
    v.attr[id] |= kAttrControl;
  }
  for (int32_t id : {v.eos, v.eot, v.eom}) {
    if (id >= 0) eog.push_back(id);
  }
  // Harmony (gpt-oss) and vocabularies like it end a turn with <|return|> / <|call|> (or
  // <|calls|> / <|flush|>); their <|end|> ends one message of the turn (the analysis before the
  // answer), so generation must go on after it.
  const bool harmony = (v.find("<|return|>") >= 0 && v.find("<|call|>") >= 0) ||
                       (v.find("<|calls|>") >= 0 && v.find("<|flush|>") >= 0);
  if (const int32_t end = v.find("<|end|>"); harmony && end >= 0) {
    std::erase(eog, end);
  }
  // Gemma 4 (and PaddleOCR) vocabularies with <|tool_response>: "</s>" is ordinary text there.
  // llama.cpp drops it from the end tokens and makes it a normal token (so parse_special never
  // matches it), even when it is the EOS id.
  if (const int32_t s = v.find("</s>"); s >= 0 && v.find("<|tool_response>") >= 0) {
    std::erase(eog, s);
    v.attr[s] = kAttrNormal;
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  v.eog_ids = std::move(eog);
}

void build_bpe_tables(Vocab& v, const VocabData& d) {
  const ByteUnicodeMap bmap;
  // Byte-level text to raw bytes; raw-UTF-8 BPE (gemma4) takes the text as it is.
  auto to_raw = [&](std::string_view s, std::string* out) {
    if (!v.raw_utf8_bpe) return bmap.decode(s, out);
    out->assign(s);
    return true;
  };
  std::string raw;
  v.raw_to_id.reserve(v.text.size());
  for (int32_t i = 0; i < v.n_vocab(); ++i) {
    if (to_raw(v.text[i], &raw)) v.raw_to_id.emplace(raw, i);
  }
  v.byte_id.assign(256, -1);
  // Every initial symbol and every merge result has an id. Raw-UTF-8 words start from
  // characters, not bytes: only the merges count there.
  bool complete = true;
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    auto it = v.raw_to_id.find(std::string_view(&c, 1));
    if (it != v.raw_to_id.end()) {
      v.byte_id[b] = it->second;
    } else if (!v.raw_utf8_bpe) {
      complete = false;
    }
  }
  if (v.raw_utf8_bpe) {
    v.hex_byte_id.assign(256, -1);
    for (int b = 0; b < 256; ++b) v.hex_byte_id[b] = v.find(fmt::format("<0x{:02X}>", b));
  }
  v.merge_by_ids.reserve(d.merges.size());
  std::string left, right, both;
  for (size_t r = 0; r < d.merges.size(); ++r) {
    const std::string_view m = d.merges[r];
    const size_t sp = m.find(' ', 1);
    if (sp == std::string_view::npos) continue;
    if (!to_raw(m.substr(0, sp), &left) || !to_raw(m.substr(sp + 1), &right)) continue;
    const int32_t rank = static_cast<int32_t>(r);
    auto li = v.raw_to_id.find(left);
    auto ri = v.raw_to_id.find(right);
    if (li == v.raw_to_id.end() || ri == v.raw_to_id.end()) {
      if (v.raw_utf8_bpe) complete = false;  // a character outside the vocabulary may still merge
      continue;
    }
    both.assign(left).append(right);
    auto mi = v.raw_to_id.find(both);
    if (mi == v.raw_to_id.end()) complete = false;
    const uint64_t key = (static_cast<uint64_t>(li->second) << 32) | static_cast<uint32_t>(ri->second);
    v.merge_by_ids.emplace(key, BpeMerge{rank, mi == v.raw_to_id.end() ? -1 : mi->second});
  }
  // Symbols without an id (and so the text-keyed table) only occur in incomplete vocabularies.
  if (complete) return;
  for (size_t r = 0; r < d.merges.size(); ++r) {
    const std::string_view m = d.merges[r];
    const size_t sp = m.find(' ', 1);
    if (sp == std::string_view::npos) continue;
    if (!to_raw(m.substr(0, sp), &left) || !to_raw(m.substr(sp + 1), &right)) continue;
    v.merge_by_text.emplace(merge_text_key(left, right), static_cast<int32_t>(r));
  }
}

void build_pieces(Vocab& v) {
  const ByteUnicodeMap bmap;
  v.piece.resize(v.text.size());
  for (int32_t i = 0; i < v.n_vocab(); ++i) {
    const std::string& t = v.text[i];
    std::string& p = v.piece[i];
    const uint32_t a = v.attr[i];
    if (a & (kAttrUnknown | kAttrControl | kAttrUserDefined)) {
      p = t;
    } else if (a & kAttrNormal) {
      if (v.type == VocabType::kSpm || v.raw_utf8_bpe) {
        for (size_t k = 0; k < t.size();) {
          if (t.compare(k, 3, "\xE2\x96\x81") == 0) {
            p.push_back(' ');
            k += 3;
          } else {
            p.push_back(t[k++]);
          }
        }
      } else if (!bmap.decode(t, &p)) {
        p = t;  // not byte-level text (llama.cpp would print [UNK_BYTE_...]): keep it literal
      }
    } else if ((a & kAttrByte) && t.size() == 6 && t.compare(0, 3, "<0x") == 0) {
      p.assign(1, static_cast<char>(std::strtol(t.substr(3, 2).c_str(), nullptr, 16)));
    }
  }
}

}  // namespace

std::string merge_text_key(std::string_view left, std::string_view right) {
  std::string key(4, '\0');
  const uint32_t n = static_cast<uint32_t>(left.size());
  std::memcpy(key.data(), &n, 4);
  key.append(left);
  key.append(right);
  return key;
}

Result<Vocab> Vocab::build(VocabData d, std::string_view name) {
  Vocab v;
  v.model_name = d.model;
  v.pre_name = d.pre.empty() ? "default" : d.pre;
  int32_t def_bos = -1, def_eos = -1, def_unk = -1;
  if (d.model == "llama") {
    v.type = VocabType::kSpm;
    def_bos = 1, def_eos = 2, def_unk = 0;
    v.add_space_prefix = true;
    v.add_bos = true;
    v.pre_name = "default";
  } else if (d.model == "gpt2") {
    v.type = VocabType::kBpe;
    def_bos = 11, def_eos = 11;
    auto pre = lookup_pre(d.pre);
    if (!pre) return error("{}: unsupported pre-tokenizer '{}' (tokenizer.ggml.pre)", name, d.pre);
    v.pre_type = pre->type;
    v.ignore_merges = pre->ignore_merges;
    v.add_bos = pre->add_bos;
    if (!d.has_merges && d.merges.empty()) {
      return error("{}: byte-level BPE without tokenizer.ggml.merges", name);
    }
  } else if (d.model == "gemma4") {
    // BPE on raw UTF-8 with "▁" for spaces; tokenizer.ggml.pre is ignored; no default ids.
    v.type = VocabType::kBpe;
    v.pre_type = PreType::kGemma4;
    v.pre_name = "gemma4";
    if (!d.has_merges) return error("{}: gemma4 tokenizer without tokenizer.ggml.merges", name);
  } else {
    return error("{}: unsupported tokenizer model '{}' (tokenizer.ggml.model)", name, d.model);
  }
  if (d.add_space_prefix) v.add_space_prefix = *d.add_space_prefix;
  RIDGE_RETURN_IF_ERROR(build_tokens(v, d, name));
  const int32_t n = v.n_vocab();
  v.bos = resolve_id(d.bos, def_bos, n);
  v.eos = resolve_id(d.eos, def_eos, n);
  v.unk = resolve_id(d.unk, def_unk, n);
  v.pad = resolve_id(d.pad, -1, n);
  if (d.add_bos) v.add_bos = *d.add_bos;
  if (d.add_eos) v.add_eos = *d.add_eos;
  if (v.pre_type == PreType::kGemma4) {
    v.raw_utf8_bpe = true;
    v.add_bos = true;  // llama.cpp overrides a false add_bos_token for Gemma 4
  }
  if (v.add_bos && v.bos < 0) return error("{}: add_bos_token is true but there is no BOS token", name);
  if (v.add_eos && v.eos < 0) return error("{}: add_eos_token is true but there is no EOS token", name);
  build_eog(v, d);
  for (int32_t i = 0; i < n; ++i) {
    if (v.attr[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) v.special_ids.push_back(i);
  }
  std::stable_sort(v.special_ids.begin(), v.special_ids.end(), [&](int32_t a, int32_t b) {
    return v.text[a].size() > v.text[b].size();
  });
  if (v.type == VocabType::kBpe) {
    build_bpe_tables(v, d);
  } else {
    v.spm_byte_id.assign(256, -1);
    for (int b = 0; b < 256; ++b) {
      v.spm_byte_id[b] = v.find(fmt::format("<0x{:02X}>", b));
      if (v.spm_byte_id[b] < 0) v.spm_byte_id[b] = v.find(std::string(1, static_cast<char>(b)));
    }
  }
  build_pieces(v);
  return v;
}

}  // namespace ridge::tokenizer
