// Named quantization mixtures (llama.cpp's file types: q4_k_m, q3_k_s, q8_0, ...) and the
// per-tensor rules that pick each tensor's storage type in them, compatible with llama.cpp's
// llama-quant.cpp: the same name gives the same type for every tensor of a dense or
// mixture-of-experts model (docs/quantize.md lists the rules and the differences).
//
// This is the one implementation of those rules: `ridge quantize` (model/quantize.h), `ridge synth
// --type q4_k_m` (model/synth.cpp) and the roofline's byte counts (model/cost.cpp) all call it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/config.h"
#include "tensor/ggml_type.h"

namespace ridge::offline {

using model::ModelConfig;

enum class QuantMix {
  kF32, kF16, kBF16,
  kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0,
  kQ2_K, kQ3_K_S, kQ3_K_M, kQ3_K_L, kQ4_K_S, kQ4_K_M, kQ5_K_S, kQ5_K_M, kQ6_K,
  kMXFP4_MOE,  // gpt-oss's: expert stacks mxfp4, every other matrix q8_0
  kIQ4_NL,     // iq4_nl with llama.cpp's raised attn_v / ffn_down / attn_output
  kIQ4_XS,     // iq4_xs, the same rules
  // The grid i-quants (1.5 to 3.7 bits per weight) and the ternary formats, with llama.cpp's rules.
  kIQ1_S, kIQ1_M, kIQ2_XXS, kIQ2_XS, kIQ2_S, kIQ2_M, kIQ3_XXS, kIQ3_XS, kIQ3_S, kIQ3_M,
  kTQ1_0, kTQ2_0,
};

struct QuantMixInfo {
  QuantMix mix;
  std::string_view name;     // lower case, as llama-quantize spells it: "q4_k_m"
  GgmlType base;             // the type of every weight no rule singles out
  uint32_t file_type;        // general.file_type (LLAMA_FTYPE_*)
  std::string_view summary;  // one line for --help and docs
  // Its rules write tensors that need an importance matrix (type_needs_imatrix) wherever rows
  // fill their 256-element blocks: `ridge quantize` refuses it without --imatrix.
  bool needs_imatrix = false;
};

// Every mixture, smallest bits first within each family.
std::span<const QuantMixInfo> quant_mixes();
const QuantMixInfo& quant_mix_info(QuantMix mix);
// Case-insensitive lookup ("Q4_K_M", "q8_0"); "q3_k", "q4_k", "q5_k" are llama-quantize's aliases
// of the _m mixtures. A usage error lists the known names.
Result<QuantMix> quant_mix_from_name(std::string_view name);
// True for names that only a mixture has (q4_k_m, q3_k_s, ...; not q4_K or q8_0, which are also
// plain ggml types): how `synth --type` and `roofline --type` tell "every matrix in q4_K" from
// "llama.cpp's Q4_K_M".
bool is_mixture_only_name(std::string_view name);

// Whether llama.cpp would convert this tensor at all: weights of two or more dimensions whose
// name ends in "weight" (3-D expert stacks included), except norms, MoE routers (ffn_gate_inp) and
// a few small special tensors. Others are copied as is.
bool tensor_is_quantizable(std::string_view name, std::span<const uint64_t> shape);

// The types ridge can write: f32, f16, bf16 and the weight formats kernels/quant quantizes to
// (kernels::can_quantize: q4_0 ... q6_K, mxfp4, the i-quants, tq1_0, tq2_0; not the activation
// formats q8_1 and q8_K).
bool is_writable_type(GgmlType type);
// Their names, comma-separated, for error messages.
std::string writable_type_names();

// llama.cpp's tensor_requires_imatrix: the i-quants of 1.5 to 3 bits per weight (iq1_s, iq1_m,
// iq2_xxs, iq2_xs, iq2_s, iq3_xxs) are garbage without an importance matrix, so a tensor written in
// one needs it, except the embedding and the output head (token_embd, per_layer_token_embd,
// output). `type` is what is written (after the shape fallback).
bool type_needs_imatrix(std::string_view tensor, GgmlType type);


// The hyper-parameters the rules look at.
struct MixModel {
  std::string arch;        // general.architecture ("falcon" has its own rules)
  int64_t n_layer = 0;     // <arch>.block_count
  int64_t n_head = 0;
  int64_t n_head_kv = 0;   // n_head / n_head_kv >= 4 gives attn_v more bits in q2_k
  int64_t n_expert = 0;    // <arch>.expert_count: > 1 takes the FFN rules' layer from the tensor
                           // name; exactly 8 (Mixtral) raises attn_v, attn_k, attn_output; >= 4
                           // raises attn_v in the 1-2 bit i-quant mixtures
};
MixModel mix_model_of(const ModelConfig& cfg);

// `--tensor-type PATTERN=TYPE`. A pattern with `*` or `?` and no other regex syntax (no
// `\ ^ $ + ( ) [ ] { } |` and no ".*") is a glob over the whole name; anything else is an
// ECMAScript regex searched anywhere in the name (as llama.cpp does). First match wins.
struct TensorTypeOverride {
  std::string pattern;
  GgmlType type = GgmlType::kF32;
};
// Parses "PATTERN=TYPE" (TYPE a ggml type name). Usage error on a bad form, type or regex.
Result<TensorTypeOverride> parse_tensor_type_override(std::string_view spec);

struct MixOptions {
  QuantMix mix = QuantMix::kQ8_0;
  bool pure = false;  // no per-tensor rules: every quantizable weight in the base type
  bool imatrix = false;  // quantized with an importance matrix (the rules differ for q4_0, q5_0,
                         // iq3_xxs, iq4_nl and iq4_xs)
  std::vector<TensorTypeOverride> overrides;
};

struct TensorDesc {
  std::string name;
  std::vector<uint64_t> shape;  // ggml order: shape[0] is the row length
  GgmlType type = GgmlType::kF32;
};

struct TensorChoice {
  bool convert = false;              // false: not a quantizable weight, copied in its own type
  GgmlType wanted = GgmlType::kF32;  // the rule's (or override's) choice
  GgmlType type = GgmlType::kF32;    // what is written: `wanted` after the shape fallback
  bool overridden = false;           // a --tensor-type pattern matched
  bool fell_back() const { return type != wanted; }
};

// The type of every tensor of a file, in the given order. Counters that llama.cpp keeps across
// tensors (the n-th attn_v) follow its order: by layer number, then by name.
Result<std::vector<TensorChoice>> choose_tensor_types(std::span<const TensorDesc> tensors,
                                                       const MixModel& model, const MixOptions& opt);

// The type of one weight `name` ("blk.3.attn_v.weight", "output.weight", "blk.3.ffn_down_exps.weight")
// with rows of `cols` elements in the standard layout of `cfg` (one attn_v per layer; one ffn_down
// per layer, or the experts' and the shared expert's in an MoE config; the embedding doubles as the
// output head when cfg.tied_embeddings): the same answer choose_tensor_types gives for that tensor
// of a whole file, with an importance matrix exactly when the mixture needs one
// (QuantMixInfo::needs_imatrix: what `ridge quantize` can write). Names llama.cpp never converts
// (the router ffn_gate_inp, norms) answer f32.
GgmlType standard_tensor_type(QuantMix mix, const ModelConfig& cfg, std::string_view name, uint64_t cols);

}  // namespace ridge::offline
