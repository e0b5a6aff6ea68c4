#include "offline/quant_mix.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <numeric>
#include <optional>
#include <regex>

namespace ridge::offline {
namespace {

using T = GgmlType;

constexpr std::array<QuantMixInfo, 20> kMixes = {{
    {QuantMix::kF32, "f32", T::kF32, 0, "32-bit float, unquantized"},
    {QuantMix::kF16, "f16", T::kF16, 1, "16-bit float"},
    {QuantMix::kBF16, "bf16", T::kBF16, 32, "bfloat16"},
    {QuantMix::kQ4_0, "q4_0", T::kQ4_0, 2, "4.5 bits/weight, output q6_K"},
    {QuantMix::kQ4_1, "q4_1", T::kQ4_1, 3, "5.0 bits/weight, output q6_K"},
    {QuantMix::kQ5_0, "q5_0", T::kQ5_0, 8, "5.5 bits/weight, output q6_K"},
    {QuantMix::kQ5_1, "q5_1", T::kQ5_1, 9, "6.0 bits/weight, output q6_K"},
    {QuantMix::kQ8_0, "q8_0", T::kQ8_0, 7, "8.5 bits/weight"},
    {QuantMix::kQ2_K, "q2_k", T::kQ2_K, 10, "q2_K; attn_v q3_K/q4_K, ffn_down and attn_output q3_K"},
    {QuantMix::kQ3_K_S, "q3_k_s", T::kQ3_K, 11, "q3_K everywhere but the output head"},
    {QuantMix::kQ3_K_M, "q3_k_m", T::kQ3_K, 12, "q3_K; attn_v, attn_output, ffn_down q4_K/q5_K"},
    {QuantMix::kQ3_K_L, "q3_k_l", T::kQ3_K, 13, "q3_K; attn_v, attn_output, ffn_down q5_K"},
    {QuantMix::kQ4_K_S, "q4_k_s", T::kQ4_K, 14, "q4_K; first attn_v and ffn_down q5_K"},
    {QuantMix::kQ4_K_M, "q4_k_m", T::kQ4_K, 15, "q4_K; half of attn_v and ffn_down q6_K"},
    {QuantMix::kQ5_K_S, "q5_k_s", T::kQ5_K, 16, "q5_K everywhere but the output head"},
    {QuantMix::kQ5_K_M, "q5_k_m", T::kQ5_K, 17, "q5_K; half of attn_v and ffn_down q6_K"},
    {QuantMix::kQ6_K, "q6_k", T::kQ6_K, 18, "q6_K"},
    {QuantMix::kMXFP4_MOE, "mxfp4_moe", T::kQ8_0, 38, "mixture of experts: expert stacks mxfp4, the rest q8_0"},
    {QuantMix::kIQ4_NL, "iq4_nl", T::kIQ4_NL, 25, "4.5 bits/weight, non-linear; output q6_K, some attn_v and ffn_down q5_K"},
    {QuantMix::kIQ4_XS, "iq4_xs", T::kIQ4_XS, 30, "4.25 bits/weight, non-linear; output q6_K, some attn_v and ffn_down q5_K"},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// llama.cpp's tensor categories (llama-quant.cpp, tensor_get_category), tested in its order. The
// expert tensors fall into the FFN categories by substring: ffn_gate_exps / ffn_gate_shexp are
// ffn_gate, ffn_up_exps / ffn_up_shexp ffn_up, ffn_down_exps / ffn_down_shexp ffn_down (the router
// ffn_gate_inp never gets here: it is not quantizable).
enum class Category { kTokenEmbd, kOutput, kAttnV, kAttnK, kAttnQ, kAttnOutput, kFfnUp, kFfnGate, kFfnDown, kOther };

Category category_of(std::string_view name) {
  if (name == "output.weight") return Category::kOutput;
  // Gemma 4's per-layer embedding table is a token embedding to llama.cpp.
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::kTokenEmbd;
  auto has = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  // attn_qkv and attn_kv_b carry the values too: llama.cpp gives them attn_v's rules.
  if (has("attn_qkv.weight") || has("attn_kv_b.weight") || has("attn_v.weight")) return Category::kAttnV;
  if (has("attn_k.weight")) return Category::kAttnK;
  if (has("attn_q.weight")) return Category::kAttnQ;
  if (has("attn_output.weight")) return Category::kAttnOutput;
  if (has("ffn_up")) return Category::kFfnUp;
  if (has("ffn_gate")) return Category::kFfnGate;
  if (has("ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

// Layer number of "blk.N.*" (-1 otherwise).
int64_t layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int64_t n = -1;
  auto [p, ec] = std::from_chars(name.data() + 4, name.data() + name.size(), n);
  return (ec == std::errc() && p < name.data() + name.size() && *p == '.') ? n : -1;
}

// What the rules know about the model, with the counters already resolved for one tensor.
struct RuleInput {
  QuantMix mix;
  bool falcon = false;
  bool llama_70b = false;  // 8 query heads share each attn_v: cheap to give it more bits
  int64_t n_gqa = 1;
  bool tied = false;       // no output.weight: the embedding is the output head
  int64_t n_expert = 0;    // 8 (Mixtral) has rules of its own
  bool imatrix = false;    // an importance matrix is given
  int64_t i_attn_v = 0, n_attn_v = 0;
  int64_t i_ffn_down = 0, n_ffn_down = 0;
};

// llama.cpp's choice of "more bits" layers in the _M mixtures: the first and last eighth and every
// third layer in between (about half).
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

GgmlType output_rule(const RuleInput& in, GgmlType base, uint64_t cols) {
  if (in.falcon || cols % traits(base).block_elems != 0) return T::kQ8_0;
  return base == T::kQ8_0 ? T::kQ8_0 : T::kQ6_K;
}

GgmlType attn_v_rule(const RuleInput& in, GgmlType t) {
  const auto m = in.mix;
  if (m == QuantMix::kQ2_K) t = in.n_gqa >= 4 ? T::kQ4_K : T::kQ3_K;
  else if (m == QuantMix::kQ3_K_M) t = in.i_attn_v < 2 ? T::kQ5_K : T::kQ4_K;
  else if (m == QuantMix::kQ3_K_L) t = T::kQ5_K;
  else if ((m == QuantMix::kIQ4_NL || m == QuantMix::kIQ4_XS) && in.n_gqa >= 4) t = T::kQ5_K;
  else if ((m == QuantMix::kQ4_K_M || m == QuantMix::kQ5_K_M) && use_more_bits(in.i_attn_v, in.n_attn_v)) t = T::kQ6_K;
  else if (m == QuantMix::kQ4_K_S && in.i_attn_v < 4) t = T::kQ5_K;
  if (in.llama_70b && (t == T::kQ3_K || t == T::kQ4_K)) t = T::kQ5_K;
  // llama.cpp: "for the 8-expert model, bumping this to Q8_0 trades just ~128MB", in every mixture.
  if (in.n_expert == 8) t = T::kQ8_0;
  return t;
}

// attn_k has a rule only in 8-expert models (and in the iq mixtures ridge does not write).
GgmlType attn_k_rule(const RuleInput& in, GgmlType t) { return in.n_expert == 8 ? T::kQ8_0 : t; }

GgmlType ffn_down_rule(const RuleInput& in, GgmlType t) {
  const auto m = in.mix;
  const int64_t i = in.i_ffn_down, n = in.n_ffn_down;
  if (m == QuantMix::kQ2_K) return T::kQ3_K;
  if (m == QuantMix::kQ3_K_M) {
    return i < n / 16 ? T::kQ5_K : (!in.falcon || use_more_bits(i, n)) ? T::kQ4_K : T::kQ3_K;
  }
  if (m == QuantMix::kQ3_K_L) return in.falcon ? T::kQ4_K : T::kQ5_K;
  if (m == QuantMix::kQ4_K_M) {
    if (in.falcon) return i < n / 16 ? T::kQ6_K : use_more_bits(i, n) ? T::kQ5_K : T::kQ4_K;
    return use_more_bits(i, n) ? T::kQ6_K : t;
  }
  if ((m == QuantMix::kIQ4_NL || m == QuantMix::kIQ4_XS) && i < n / 8 && !in.imatrix) return T::kQ5_K;
  if (m == QuantMix::kQ5_K_M && use_more_bits(i, n)) return T::kQ6_K;
  if (m == QuantMix::kQ4_K_S && !in.falcon && i < n / 8) return T::kQ5_K;
  return t;
}

GgmlType attn_output_rule(const RuleInput& in, GgmlType t) {
  const auto m = in.mix;
  if (in.falcon) return m == QuantMix::kQ3_K_L ? T::kQ4_K : t;
  if (in.n_expert == 8) {
    // In 8-expert models the low mixtures (not q3_K_L, q5_K_*) raise attn_output to q5_K instead.
    const bool low = m == QuantMix::kQ2_K || m == QuantMix::kQ3_K_S || m == QuantMix::kQ3_K_M ||
                     m == QuantMix::kQ4_K_S || m == QuantMix::kQ4_K_M || m == QuantMix::kIQ4_NL ||
                     m == QuantMix::kIQ4_XS;
    return low ? T::kQ5_K : t;
  }
  if (m == QuantMix::kQ2_K) return T::kQ3_K;
  if (m == QuantMix::kQ3_K_M) return T::kQ4_K;
  if (m == QuantMix::kQ3_K_L) return T::kQ5_K;
  return t;
}

// The mixture's type for one quantizable tensor (before the shape fallback).
GgmlType rule_type(const RuleInput& in, Category cat, uint64_t cols) {
  const GgmlType base = quant_mix_info(in.mix).base;
  if (cat == Category::kOutput || (in.tied && cat == Category::kTokenEmbd)) return output_rule(in, base, cols);
  switch (cat) {
    case Category::kAttnV: return attn_v_rule(in, base);
    case Category::kAttnK: return attn_k_rule(in, base);
    case Category::kFfnDown: return ffn_down_rule(in, base);
    case Category::kAttnOutput: return attn_output_rule(in, base);
    default: return base;
  }
}

bool is_quantized(GgmlType t) { return t != T::kF32 && t != T::kF16 && t != T::kBF16; }

bool is_ffn(Category c) { return c == Category::kFfnDown || c == Category::kFfnGate || c == Category::kFfnUp; }

// The layer of an FFN tensor of a mixture-of-experts model, which llama.cpp requires to be named
// blk.N.* with N below the block count (it stops otherwise).
Result<int64_t> moe_ffn_layer(std::string_view name, int64_t n_layer) {
  const int64_t l = layer_of(name);
  if (l < 0) return error("tensor '{}': no layer number (blk.N.) in the name of an FFN tensor of a mixture-of-experts model", name);
  if (l >= n_layer) return error("tensor '{}': layer {} is not below the block count {}", name, l, n_layer);
  return l;
}

RuleInput rule_input(QuantMix mix, const MixModel& m, bool tied) {
  RuleInput in;
  in.mix = mix;
  in.falcon = m.arch == "falcon";
  in.llama_70b = m.arch == "llama" && m.n_layer == 80 && m.n_head != m.n_head_kv;
  in.n_gqa = m.n_head_kv > 0 ? m.n_head / m.n_head_kv : 1;
  in.tied = tied;
  in.n_expert = m.n_expert;
  in.n_ffn_down = m.n_layer;
  return in;
}

bool glob_match(std::string_view pat, std::string_view s) {
  size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pat.size() && (pat[p] == '?' || pat[p] == s[i])) {
      ++p, ++i;
    } else if (p < pat.size() && pat[p] == '*') {
      star = p++, mark = i;
    } else if (star != std::string_view::npos) {
      p = star + 1, i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

bool is_glob(std::string_view pat) {
  if (pat.find_first_of("*?") == std::string_view::npos) return false;
  if (pat.find_first_of("\\^$+()[]{}|") != std::string_view::npos) return false;
  return pat.find(".*") == std::string_view::npos && pat.find(".?") == std::string_view::npos;
}

// One compiled --tensor-type pattern.
struct Matcher {
  std::string glob;           // set for globs
  std::optional<std::regex> re;
  GgmlType type;

  static Result<Matcher> make(const TensorTypeOverride& o) {
    Matcher m{{}, std::nullopt, o.type};
    if (is_glob(o.pattern)) {
      m.glob = o.pattern;
      return m;
    }
    try {
      m.re.emplace(o.pattern);
    } catch (const std::regex_error& e) {
      return usage_error("--tensor-type pattern '{}': bad regular expression ({})", o.pattern, e.what());
    }
    return m;
  }
  bool matches(const std::string& name) const {
    return re ? std::regex_search(name, *re) : glob_match(glob, name);
  }
};

}  // namespace

std::span<const QuantMixInfo> quant_mixes() { return kMixes; }

const QuantMixInfo& quant_mix_info(QuantMix mix) {
  for (const auto& m : kMixes) {
    if (m.mix == mix) return m;
  }
  RIDGE_CHECK(false);
  return kMixes[0];
}

Result<QuantMix> quant_mix_from_name(std::string_view name) {
  std::string n = lower(name);
  if (n == "q3_k" || n == "q4_k" || n == "q5_k") n += "_m";  // llama-quantize's aliases
  for (const auto& m : kMixes) {
    if (m.name == n) return m.mix;
  }
  std::string known;
  for (const auto& m : kMixes) known += (known.empty() ? "" : ", ") + std::string(m.name);
  return usage_error("unknown quantization type '{}' (known: {})", name, known);
}

bool is_mixture_only_name(std::string_view name) {
  return quant_mix_from_name(name).ok() && !ggml_type_from_name(name).has_value();
}

bool tensor_is_quantizable(std::string_view name, std::span<const uint64_t> shape) {
  int n_dims = 1;
  for (size_t i = 1; i < shape.size(); ++i) {
    if (shape[i] > 1) n_dims = static_cast<int>(i) + 1;
  }
  if (n_dims < 2 || !name.ends_with("weight")) return false;
  // Norms, MoE routers, position / token-type embeddings and small conv or mixing tensors stay
  // as they are (the same list of exceptions as llama.cpp, minus architectures ridge never reads).
  constexpr std::string_view kKeep[] = {"_norm.weight", "ffn_gate_inp.weight", "position_embd", "token_types",
                                        "ssm_conv1d",   "altup",               "laurel",        "per_layer_model_proj",
                                        "attn_rel_b.weight", "time_mix_", "shortconv.conv.weight"};
  for (auto k : kKeep) {
    if (name.find(k) != std::string_view::npos) return false;
  }
  return true;
}

MixModel mix_model_of(const ModelConfig& cfg) {
  return MixModel{cfg.arch, cfg.n_layer, cfg.n_head, cfg.n_head_kv, cfg.n_expert};
}

Result<TensorTypeOverride> parse_tensor_type_override(std::string_view spec) {
  const size_t eq = spec.rfind('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == spec.size()) {
    return usage_error("--tensor-type '{}': expected PATTERN=TYPE, e.g. attn_v=q8_0", spec);
  }
  TensorTypeOverride o{std::string(spec.substr(0, eq)), T::kF32};
  const std::string_view type_name = spec.substr(eq + 1);
  auto t = ggml_type_from_name(type_name);
  if (!t || !is_writable_type(*t)) {
    return usage_error("--tensor-type '{}': '{}' is not a type ridge can write (f32, f16, bf16, q4_0, q4_1, "
                       "q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, mxfp4, iq4_nl, iq4_xs)", spec, type_name);
  }
  o.type = *t;
  if (!is_glob(o.pattern)) {
    try {
      std::regex re(o.pattern);
    } catch (const std::regex_error& e) {
      return usage_error("--tensor-type '{}': bad regular expression ({})", spec, e.what());
    }
  }
  return o;
}

bool is_writable_type(GgmlType t) {
  switch (t) {
    case T::kF32: case T::kF16: case T::kBF16: case T::kQ4_0: case T::kQ4_1: case T::kQ5_0: case T::kQ5_1:
    case T::kQ8_0: case T::kQ2_K: case T::kQ3_K: case T::kQ4_K: case T::kQ5_K: case T::kQ6_K:
    case T::kMXFP4: case T::kIQ4_NL: case T::kIQ4_XS:
      return true;
    default:
      return false;
  }
}

Result<std::vector<TensorChoice>> choose_tensor_types(std::span<const TensorDesc> tensors, const MixModel& model,
                                                       const MixOptions& opt) {
  std::vector<Matcher> matchers;
  for (const auto& o : opt.overrides) {
    RIDGE_ASSIGN_OR_RETURN(Matcher m, Matcher::make(o));
    matchers.push_back(std::move(m));
  }
  bool tied = true;
  int64_t n_attn_v = 0;
  for (const auto& t : tensors) {
    if (t.name == "output.weight") tied = false;
    if (category_of(t.name) == Category::kAttnV) ++n_attn_v;
  }
  RuleInput in = rule_input(opt.mix, model, tied);
  in.n_attn_v = n_attn_v;
  in.imatrix = opt.imatrix;
  const GgmlType base = quant_mix_info(opt.mix).base;

  // llama.cpp walks the tensors by layer number (non-layer tensors first), then by name.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });

  std::vector<TensorChoice> out(tensors.size());
  for (size_t idx : order) {
    const TensorDesc& t = tensors[idx];
    TensorChoice& c = out[idx];
    if (!tensor_is_quantizable(t.name, t.shape)) {
      c.wanted = c.type = t.type;
      continue;
    }
    c.convert = true;
    c.wanted = base;
    for (const auto& m : matchers) {
      if (m.matches(t.name)) {
        c.wanted = m.type;
        c.overridden = true;
        break;
      }
    }
    const uint64_t cols = t.shape.empty() ? 1 : t.shape[0];
    if (!c.overridden && opt.mix == QuantMix::kMXFP4_MOE) {
      // llama.cpp's MXFP4_MOE: 3-D tensors (expert stacks) mxfp4, everything else q8_0, the
      // output head and embeddings included; --pure changes nothing.
      c.wanted = t.shape.size() >= 3 && t.shape[2] > 1 ? T::kMXFP4 : T::kQ8_0;
    } else if (!c.overridden && !opt.pure && is_quantized(base)) {
      const Category cat = category_of(t.name);
      RuleInput r = in;
      if (model.n_expert > 1 && is_ffn(cat)) {
        // llama.cpp (layer_info): in a mixture-of-experts model the FFN rules take the layer from
        // the name, since a layer holds several ffn_down (experts, shared expert) and old Mixtral
        // files store one tensor per expert, not in layer order.
        RIDGE_ASSIGN_OR_RETURN(r.i_ffn_down, moe_ffn_layer(t.name, model.n_layer));
      }
      c.wanted = rule_type(r, cat, cols);
      // The n-th attn_v / ffn_down counts only tensors the rules were asked about (llama.cpp).
      if (cat == Category::kAttnV) ++in.i_attn_v;
      if (cat == Category::kFfnDown) ++in.i_ffn_down;
    }
    c.type = fallback_type(c.wanted, cols);
  }
  return out;
}

GgmlType standard_tensor_type(QuantMix mix, const ModelConfig& cfg, std::string_view name, uint64_t cols) {
  // Routers (ffn_gate_inp), norms and the other tensors llama.cpp never converts stay f32, and so
  // does the shared expert's gate ffn_gate_inp_shexp, a vector [n_embd] in the standard layout.
  const uint64_t shape[] = {cols, 2};
  if (!tensor_is_quantizable(name, shape) || name.find("ffn_gate_inp_shexp") != std::string_view::npos) return T::kF32;
  const GgmlType base = quant_mix_info(mix).base;
  if (!is_quantized(base)) return base;
  if (mix == QuantMix::kMXFP4_MOE) {
    return fallback_type(name.find("_exps.") != std::string_view::npos ? T::kMXFP4 : T::kQ8_0, cols);
  }
  RuleInput in = rule_input(mix, mix_model_of(cfg), cfg.tied_embeddings);
  in.n_attn_v = cfg.n_layer;
  in.i_attn_v = in.i_ffn_down = std::max<int64_t>(layer_of(name), 0);
  return fallback_type(rule_type(in, category_of(name), cols), cols);
}

}  // namespace ridge::offline
