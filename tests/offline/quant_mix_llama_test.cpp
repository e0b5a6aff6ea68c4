// ridge's per-tensor types against llama.cpp's own for the i-quant and ternary mixtures (iq1_s ...
// iq3_m, tq1_0, tq2_0) and, where an importance matrix changes llama.cpp's rules, q4_0, q5_0,
// iq4_nl and iq4_xs: every tensor of the cases in quant_mix_llama_cases.h (llama-quantize
// --dry-run's types; how they were made is written there).
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/writer.h"
#include "offline/presets.h"
#include "offline/quant_mix.h"
#include "offline/synth.h"
#include "offline/weight_types.h"
#include "quant_mix_llama_cases.h"

namespace ridge::offline {
namespace {

using T = GgmlType;
using namespace llama_oracle;  // NOLINT(google-build-using-namespace)

// The config and tensor list of the file `ridge synth --preset P --layers N --type f16` writes
// (no tensor data made).
struct OracleFile {
  ModelConfig cfg;
  std::vector<TensorDesc> tensors;
};

OracleFile oracle_file(const OracleShape& s) {
  OracleFile f;
  auto cfg = preset_config(s.preset);
  EXPECT_TRUE(cfg.ok()) << s.preset;
  if (!cfg.ok()) return f;
  if (s.layers > 0) cfg->n_layer = s.layers;
  gguf::Writer w;
  SynthOptions opt;
  opt.type = T::kF16;
  auto effective = build_synthetic_model(*cfg, opt, w);
  EXPECT_TRUE(effective.ok()) << effective.status().message();
  if (!effective.ok()) return f;
  f.cfg = *effective;
  for (const auto& e : w.tensor_entries()) {
    f.tensors.push_back({std::string(e.name), {e.shape.begin(), e.shape.end()}, e.type});
  }
  return f;
}

// "blk.3.attn_v.weight" -> (3, "attn_v"); "output.weight" -> (-1, "output").
std::pair<int64_t, std::string> oracle_stem(std::string_view name) {
  if (name.ends_with(".weight")) name.remove_suffix(7);
  int64_t layer = -1;
  if (name.starts_with("blk.")) {
    const size_t dot = name.find('.', 4);
    layer = std::stoll(std::string(name.substr(4, dot - 4)));
    name.remove_prefix(dot + 1);
  }
  return {layer, std::string(name)};
}

struct OracleType {
  T wanted = T::kF32;  // the rule's type
  T type = T::kF32;    // written, after the row-length fallback
};

// A case's `types`, parsed: stem -> runs of layers.
class OracleTypes {
 public:
  explicit OracleTypes(std::string_view spec) {
    while (!spec.empty()) {
      const size_t end = std::min(spec.find(' '), spec.size());
      const std::string_view entry = spec.substr(0, end);
      spec.remove_prefix(std::min(end + 1, spec.size()));
      const size_t eq = entry.find('=');
      auto& runs = stems_[std::string(entry.substr(0, eq))];
      std::string_view list = entry.substr(eq + 1);
      while (!list.empty()) {
        const size_t comma = std::min(list.find(','), list.size());
        std::string_view run = list.substr(0, comma);
        list.remove_prefix(std::min(comma + 1, list.size()));
        Run r;
        if (const size_t colon = run.find(':'); colon != std::string_view::npos) {
          const std::string layers(run.substr(0, colon));
          const size_t dash = layers.find('-');
          r.first = std::stoll(layers.substr(0, dash));
          r.last = dash == std::string::npos ? r.first : std::stoll(layers.substr(dash + 1));
          run.remove_prefix(colon + 1);
        }
        const size_t gt = run.find('>');
        r.want.wanted = type(run.substr(0, gt));
        r.want.type = gt == std::string_view::npos ? r.want.wanted : type(run.substr(gt + 1));
        runs.push_back(r);
      }
    }
  }

  std::optional<OracleType> find(const std::string& stem, int64_t layer) const {
    auto it = stems_.find(stem);
    if (it == stems_.end()) it = stems_.find("*");
    if (it == stems_.end()) return std::nullopt;
    for (const Run& r : it->second) {
      if (r.first <= layer && layer <= r.last) return r.want;
    }
    return std::nullopt;
  }

 private:
  struct Run {
    int64_t first = -1, last = 1 << 30;  // every layer (and none) unless given
    OracleType want;
  };
  static T type(std::string_view name) {
    auto t = ggml_type_from_name(name);
    EXPECT_TRUE(t.has_value()) << name;
    return t.value_or(T::kF32);
  }
  std::map<std::string, std::vector<Run>> stems_;
};

// Every tensor of every case: the rule's type and the written one as llama-quantize's, the same
// tensors converted, the imatrix requirement as llama.cpp's; and standard_tensor_type (synth,
// roofline) gives the written type where its imatrix assumption (QuantMixInfo::needs_imatrix)
// is the case's.
TEST(QuantMixLlama, EveryTensorAsLlamaQuantizeDryRun) {
  std::map<std::string, OracleFile> files;
  for (const OracleShape& s : kOracleShapes) files[s.name] = oracle_file(s);
  for (const OracleCase& c : kOracleCases) {
    SCOPED_TRACE(std::string(c.shape) + " " + c.mix);
    const OracleFile& f = files.at(c.shape);
    ASSERT_FALSE(f.tensors.empty());
    auto mix = quant_mix_from_name(c.mix);
    ASSERT_TRUE(mix.ok()) << mix.status().message();
    const OracleTypes expected(c.types);
    for (bool imatrix : {false, true}) {
      if ((c.imatrix == kWith && !imatrix) || (c.imatrix == kWithout && imatrix)) continue;
      SCOPED_TRACE(imatrix ? "with an imatrix" : "without an imatrix");
      MixOptions opt;
      opt.mix = *mix;
      opt.imatrix = imatrix;
      auto r = choose_tensor_types(f.tensors, mix_model_of(f.cfg), opt);
      ASSERT_TRUE(r.ok()) << r.status().message();
      const bool standard = imatrix == quant_mix_info(*mix).needs_imatrix;
      int converted = 0;
      bool needs = false;
      for (size_t i = 0; i < f.tensors.size(); ++i) {
        const TensorDesc& d = f.tensors[i];
        const TensorChoice& got = (*r)[i];
        if (!got.convert) continue;
        ++converted;
        needs = needs || type_needs_imatrix(d.name, got.type);
        const auto [layer, stem] = oracle_stem(d.name);
        const std::optional<OracleType> want = expected.find(stem, layer);
        ASSERT_TRUE(want.has_value()) << d.name;
        EXPECT_EQ(ggml_type_name(got.wanted), ggml_type_name(want->wanted)) << d.name;
        EXPECT_EQ(ggml_type_name(got.type), ggml_type_name(want->type)) << d.name;
        if (standard) {
          EXPECT_EQ(ggml_type_name(standard_tensor_type(*mix, f.cfg, d.name, d.shape[0])),
                    ggml_type_name(want->type))
              << d.name << " (standard_tensor_type)";
        }
      }
      EXPECT_EQ(converted, c.converted);
      if (!imatrix) {
        EXPECT_EQ(needs, c.needs_imatrix);
      }
    }
  }
}

// The file types and default types of llama.h / llama_ftype_get_default_type.
TEST(QuantMixLlama, FileTypesAndBaseTypes) {
  struct Row {
    const char* name;
    uint32_t ftype;
    T base;
    bool needs_imatrix;
  };
  const Row rows[] = {{"iq2_xxs", 19, T::kIQ2_XXS, true}, {"iq2_xs", 20, T::kIQ2_XS, true},
                      {"iq3_xs", 22, T::kIQ3_S, true},    {"iq3_xxs", 23, T::kIQ3_XXS, true},
                      {"iq1_s", 24, T::kIQ1_S, true},     {"iq3_s", 26, T::kIQ3_S, false},
                      {"iq3_m", 27, T::kIQ3_S, false},    {"iq2_s", 28, T::kIQ2_XS, true},
                      {"iq2_m", 29, T::kIQ2_S, true},     {"iq1_m", 31, T::kIQ1_M, true},
                      {"tq1_0", 36, T::kTQ1_0, false},    {"tq2_0", 37, T::kTQ2_0, false}};
  for (const Row& r : rows) {
    auto m = quant_mix_from_name(r.name);
    ASSERT_TRUE(m.ok()) << r.name;
    EXPECT_EQ(quant_mix_info(*m).name, r.name);
    EXPECT_EQ(quant_mix_info(*m).file_type, r.ftype) << r.name;
    EXPECT_EQ(quant_mix_info(*m).base, r.base) << r.name;
    EXPECT_EQ(quant_mix_info(*m).needs_imatrix, r.needs_imatrix) << r.name;
  }
  EXPECT_TRUE(quant_mix_from_name("IQ2_M").ok());
  // Names that are also ggml types mean "every matrix in it" to synth and roofline; only
  // iq2_m, iq3_xs and iq3_m are mixture-only.
  EXPECT_TRUE(is_mixture_only_name("iq2_m"));
  EXPECT_TRUE(is_mixture_only_name("iq3_xs"));
  EXPECT_TRUE(is_mixture_only_name("iq3_m"));
  EXPECT_FALSE(is_mixture_only_name("iq2_xxs"));
  EXPECT_FALSE(is_mixture_only_name("tq1_0"));
  // The embedding and the head never need an imatrix (llama.cpp's tensor_requires_imatrix).
  EXPECT_TRUE(type_needs_imatrix("blk.0.attn_q.weight", T::kIQ2_XXS));
  EXPECT_TRUE(type_needs_imatrix("blk.0.ffn_down_exps.weight", T::kIQ3_XXS));
  EXPECT_FALSE(type_needs_imatrix("blk.0.attn_q.weight", T::kIQ3_S));
  EXPECT_FALSE(type_needs_imatrix("blk.0.attn_q.weight", T::kQ2_K));
  EXPECT_FALSE(type_needs_imatrix("token_embd.weight", T::kIQ1_S));
  EXPECT_FALSE(type_needs_imatrix("output.weight", T::kIQ2_XS));
}

// The roofline's and synth's names: a mixture-only name takes the rules, a ggml type name is
// every matrix in it.
TEST(QuantMixLlama, WeightTypesByName) {
  const ModelConfig cfg = *preset_config("llama-3.2-1b");  // 32 / 8 heads
  auto m = weight_types_by_name("iq3_m", cfg);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)(model::TensorRole::kAttnV, 3), T::kQ4_K);
  EXPECT_EQ((*m)(model::TensorRole::kFfnUp, 3), T::kIQ3_S);
  auto u = weight_types_by_name("iq2_xxs", cfg);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ((*u)(model::TensorRole::kAttnV, 3), T::kIQ2_XXS);
}

// The 1-2 bit mixtures' FFN rules count tensors, so (as in llama.cpp) an expert tensor without a
// layer number stops only the other mixtures.
TEST(QuantMixLlama, LowBitMixturesNeedNoLayerInExpertNames) {
  std::vector<TensorDesc> descs = {{"blk.0.attn_v.weight", {256, 256}, T::kF16},
                                   {"ffn_down_exps.weight", {256, 256, 8}, T::kF16}};
  MixModel model{"qwen3moe", 8, 4, 2, 8};
  MixOptions opt;
  opt.mix = QuantMix::kIQ2_XXS;
  auto r = choose_tensor_types(descs, model, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[1].type, T::kQ2_K);  // the first ffn_down counted: 0 < 8 / 8
  opt.mix = QuantMix::kIQ3_S;
  EXPECT_FALSE(choose_tensor_types(descs, model, opt).ok());
}

}  // namespace
}  // namespace ridge::offline
