#include "offline/quant_mix.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <numeric>
#include <optional>
#include <regex>

#include "kernels/quant/quants.h"
#include "offline/quant_mix_rules.h"

namespace ridge::offline {
namespace {

using T = GgmlType;
using namespace mix_rules;  // NOLINT(google-build-using-namespace)

// The file types (LLAMA_FTYPE_*) and default types of llama.cpp's llama_ftype_get_default_type;
// note iq2_s's base is iq2_xs and iq2_m's iq2_s, iq3_xs's iq3_s.
constexpr std::array<QuantMixInfo, 32> kMixes = {{
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
    {QuantMix::kIQ1_S, "iq1_s", T::kIQ1_S, 24, "1.56 bits/weight, needs --imatrix; attn_output iq2_xxs, attn_v and first ffn_down q2_K/q4_K", true},
    {QuantMix::kIQ1_M, "iq1_m", T::kIQ1_M, 31, "1.75 bits/weight, needs --imatrix; attn_output iq2_xxs, attn_v and first ffn_down q2_K/q4_K", true},
    {QuantMix::kIQ2_XXS, "iq2_xxs", T::kIQ2_XXS, 19, "2.06 bits/weight, needs --imatrix; attn_v and first ffn_down q2_K/q4_K", true},
    {QuantMix::kIQ2_XS, "iq2_xs", T::kIQ2_XS, 20, "2.31 bits/weight, needs --imatrix; attn_v and first ffn_down q2_K/q4_K", true},
    {QuantMix::kIQ2_S, "iq2_s", T::kIQ2_XS, 28, "2.5 bits/weight, needs --imatrix; iq2_xs, attn_output, attn_v, first ffn_down iq3_s", true},
    {QuantMix::kIQ2_M, "iq2_m", T::kIQ2_S, 29, "2.7 bits/weight, needs --imatrix; iq2_s, attn_output, attn_v, first ffn_down iq3_s", true},
    {QuantMix::kIQ3_XXS, "iq3_xxs", T::kIQ3_XXS, 23, "3.06 bits/weight, needs --imatrix; attn_q/k iq2_s, attn_output iq3_s", true},
    {QuantMix::kIQ3_XS, "iq3_xs", T::kIQ3_S, 22, "3.3 bits/weight, needs --imatrix; iq3_s, attn_q/k and middle ffn_gate/up iq3_xxs", true},
    {QuantMix::kIQ3_S, "iq3_s", T::kIQ3_S, 26, "3.44 bits/weight; attn_v q4_K when n_head/n_head_kv >= 4"},
    {QuantMix::kIQ3_M, "iq3_m", T::kIQ3_S, 27, "3.66 bits/weight; iq3_s, attn_v and attn_output q4_K, first ffn_down q4_K"},
    {QuantMix::kIQ4_NL, "iq4_nl", T::kIQ4_NL, 25, "4.5 bits/weight, non-linear; output q6_K, some attn_v and ffn_down q5_K"},
    {QuantMix::kIQ4_XS, "iq4_xs", T::kIQ4_XS, 30, "4.25 bits/weight, non-linear; output q6_K, some attn_v and ffn_down q5_K"},
    {QuantMix::kTQ1_0, "tq1_0", T::kTQ1_0, 36, "1.69 bits/weight, ternary; embedding q4_K, output q6_K"},
    {QuantMix::kTQ2_0, "tq2_0", T::kTQ2_0, 37, "2.06 bits/weight, ternary; embedding q4_K, output q6_K"},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_quantized(GgmlType t) { return t != T::kF32 && t != T::kF16 && t != T::kBF16; }

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
  in.n_ffn = m.n_layer;
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

// llama.cpp's running count of ffn_down tensors before `name` (in layer `layer`) in the standard
// layout of cfg: per layer, in name order, the dense ffn_down (every layer of a dense model, and
// beside the experts in Gemma 4's), the experts' ffn_down_exps and the shared expert's
// ffn_down_shexp.
int64_t standard_ffn_down_index(const ModelConfig& cfg, std::string_view name, int64_t layer) {
  const bool dense = !cfg.is_moe() || cfg.moe_gemma4, exps = cfg.is_moe();
  const bool shexp = cfg.is_moe() && cfg.n_ff_shexp > 0;
  const int64_t per_layer = int64_t{dense} + int64_t{exps} + int64_t{shexp};
  int64_t before = 0;  // this layer's ffn_down tensors that sort before `name`
  if (name.find("ffn_down_exps") != std::string_view::npos) before = int64_t{dense};
  if (name.find("ffn_down_shexp") != std::string_view::npos) before = int64_t{dense + exps};
  return layer * per_layer + before;
}

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
    return usage_error("--tensor-type '{}': '{}' is not a type ridge can write ({})", spec, type_name,
                       writable_type_names());
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
    case T::kF32: case T::kF16: case T::kBF16:
      return true;
    case T::kQ8_1: case T::kQ8_K:  // the kernels' activation formats, not weight types
      return false;
    default:
      return kernels::can_quantize(t);
  }
}

std::string writable_type_names() {
  size_t n = 0;
  const GgmlTypeTraits* all = ggml_all_types(&n);
  std::string out = "f32, f16, bf16";
  for (size_t i = 0; i < n; ++i) {
    if (is_quantized(all[i].type) && is_writable_type(all[i].type)) out += ", " + std::string(all[i].name);
  }
  return out;
}

bool type_needs_imatrix(std::string_view tensor, GgmlType type) {
  if (tensor == "output.weight" || category_of(tensor) == Category::kTokenEmbd) return false;
  switch (type) {
    case T::kIQ1_S: case T::kIQ1_M: case T::kIQ2_XXS: case T::kIQ2_XS: case T::kIQ2_S: case T::kIQ3_XXS:
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
  int64_t i_ffn_gate = 0, i_ffn_up = 0;
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
      int64_t* counter = cat == Category::kFfnDown ? &in.i_ffn_down
                         : cat == Category::kFfnGate ? &i_ffn_gate
                         : cat == Category::kFfnUp   ? &i_ffn_up
                                                     : nullptr;
      if (counter != nullptr) r.i_ffn = *counter;
      if (model.n_expert > 1 && is_ffn(cat) && ffn_rules_read_layer(opt.mix)) {
        // llama.cpp (layer_info): in a mixture-of-experts model the FFN rules take the layer from
        // the name, since a layer holds several ffn_down (experts, shared expert) and old Mixtral
        // files store one tensor per expert, not in layer order. (The 1-2 bit mixtures' ffn_down
        // rule reads the counter even there.)
        RIDGE_ASSIGN_OR_RETURN(r.i_ffn, moe_ffn_layer(t.name, model.n_layer));
      }
      c.wanted = rule_type(r, cat, cols);
      // The n-th attn_v / ffn_down / ffn_gate / ffn_up counts only tensors the rules were asked
      // about (llama.cpp).
      if (cat == Category::kAttnV) ++in.i_attn_v;
      if (counter != nullptr) ++*counter;
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
  in.imatrix = quant_mix_info(mix).needs_imatrix;
  in.n_attn_v = cfg.n_layer;
  const int64_t layer = std::max<int64_t>(layer_of(name), 0);
  in.i_attn_v = in.i_ffn = layer;
  in.i_ffn_down = standard_ffn_down_index(cfg, name, layer);
  return fallback_type(rule_type(in, category_of(name), cols), cols);
}

}  // namespace ridge::offline
