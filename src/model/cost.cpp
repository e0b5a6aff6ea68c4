#include "model/cost.h"

#include <array>
#include <cctype>
#include <charconv>
#include <map>
#include <utility>
#include <vector>

#include "gguf/reader.h"
#include "model/quant_mix.h"

namespace ridge::model {
namespace {

constexpr std::array<std::pair<TensorRole, std::string_view>, 17> kRoleNames = {{
    {TensorRole::kTokenEmbd, "token_embd"},   {TensorRole::kOutput, "output"},
    {TensorRole::kOutputNorm, "output_norm"}, {TensorRole::kAttnNorm, "attn_norm"},
    {TensorRole::kAttnQ, "attn_q"},           {TensorRole::kAttnK, "attn_k"},
    {TensorRole::kAttnV, "attn_v"},           {TensorRole::kAttnO, "attn_output"},
    {TensorRole::kAttnQNorm, "attn_q_norm"},  {TensorRole::kAttnKNorm, "attn_k_norm"},
    {TensorRole::kAttnQBias, "attn_q.bias"},  {TensorRole::kAttnKBias, "attn_k.bias"},
    {TensorRole::kAttnVBias, "attn_v.bias"},  {TensorRole::kFfnNorm, "ffn_norm"},
    {TensorRole::kFfnGate, "ffn_gate"},       {TensorRole::kFfnUp, "ffn_up"},
    {TensorRole::kFfnDown, "ffn_down"},
}};

bool is_matrix(TensorRole r) {
  switch (r) {
    case TensorRole::kTokenEmbd: case TensorRole::kOutput: case TensorRole::kAttnQ:
    case TensorRole::kAttnK: case TensorRole::kAttnV: case TensorRole::kAttnO:
    case TensorRole::kFfnGate: case TensorRole::kFfnUp: case TensorRole::kFfnDown:
      return true;
    default:
      return false;
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A type that can hold rows of `cols` elements: llama.cpp's fallback (model/quant_mix.h).
GgmlType storable_type(GgmlType t, int64_t cols) { return fallback_type(t, static_cast<uint64_t>(cols)); }

// Bytes of a [rows, cols] tensor of type t (cols contiguous).
double tensor_bytes(GgmlType t, int64_t rows, int64_t cols) {
  GgmlType s = storable_type(t, cols);
  return static_cast<double>(*ggml_row_bytes(s, static_cast<uint64_t>(cols))) * static_cast<double>(rows);
}

// A llama.cpp mixture: every matrix's type from model/quant_mix.h's rules (the ones `ridge
// quantize` and `ridge synth` apply), norms and biases f32.
TensorTypeFn mixture_types(QuantMix mix, const ModelConfig& cfg) {
  return [mix, cfg](TensorRole role, int64_t layer) {
    if (!is_matrix(role)) return GgmlType::kF32;
    const int64_t cols = role == TensorRole::kAttnO ? cfg.q_dim() : role == TensorRole::kFfnDown ? cfg.n_ff : cfg.n_embd;
    const std::string stem(tensor_role_name(role));
    const std::string name = layer >= 0 ? fmt::format("blk.{}.{}.weight", layer, stem) : stem + ".weight";
    return standard_tensor_type(mix, cfg, name, static_cast<uint64_t>(cols));
  };
}

struct Shape {
  TensorRole role;
  int64_t rows;
  int64_t cols;
};

// Every per-layer tensor of the architecture with its [rows, cols] shape.
std::vector<Shape> layer_shapes(const ModelConfig& c) {
  std::vector<Shape> s = {
      {TensorRole::kAttnNorm, 1, c.n_embd},      {TensorRole::kAttnQ, c.q_dim(), c.n_embd},
      {TensorRole::kAttnK, c.kv_dim(), c.n_embd}, {TensorRole::kAttnV, c.kv_dim(), c.n_embd},
      {TensorRole::kAttnO, c.n_embd, c.q_dim()},  {TensorRole::kFfnNorm, 1, c.n_embd},
      {TensorRole::kFfnGate, c.n_ff, c.n_embd},   {TensorRole::kFfnUp, c.n_ff, c.n_embd},
      {TensorRole::kFfnDown, c.n_embd, c.n_ff},
  };
  if (c.qk_norm) {
    s.push_back({TensorRole::kAttnQNorm, 1, c.head_dim});
    s.push_back({TensorRole::kAttnKNorm, 1, c.head_dim});
  }
  if (c.qkv_bias) {
    s.push_back({TensorRole::kAttnQBias, 1, c.q_dim()});
    s.push_back({TensorRole::kAttnKBias, 1, c.kv_dim()});
    s.push_back({TensorRole::kAttnVBias, 1, c.kv_dim()});
  }
  return s;
}

}  // namespace

std::string_view tensor_role_name(TensorRole role) {
  for (const auto& [r, name] : kRoleNames) {
    if (r == role) return name;
  }
  return "?";
}

TensorTypeFn uniform_types(GgmlType type) {
  return [type](TensorRole role, int64_t) { return is_matrix(role) ? type : GgmlType::kF32; };
}

Result<TensorTypeFn> weight_types_by_name(std::string_view name, const ModelConfig& cfg) {
  const std::string n = lower(name);
  if (auto t = ggml_type_from_name(n)) return uniform_types(*t);
  if (auto mix = quant_mix_from_name(n); mix.ok()) return mixture_types(*mix, cfg);
  return usage_error("unknown weight type '{}' (a ggml type such as f16, bf16, q8_0, q4_K, or a "
                     "llama.cpp mixture such as q4_k_m, q3_k_s, q5_k_m)", name);
}

Result<TensorTypeFn> weight_types_from_gguf(const gguf::File& file) {
  std::map<std::pair<TensorRole, int64_t>, GgmlType> types;
  for (const auto& t : file.tensors()) {
    std::string_view rest = t.name;
    int64_t layer = -1;
    if (rest.starts_with("blk.")) {
      rest.remove_prefix(4);
      auto dot = rest.find('.');
      if (dot == std::string_view::npos) continue;
      auto [p, ec] = std::from_chars(rest.data(), rest.data() + dot, layer);
      if (ec != std::errc() || p != rest.data() + dot) continue;
      rest.remove_prefix(dot + 1);
    }
    for (const auto& [role, stem] : kRoleNames) {
      bool bias = stem.ends_with(".bias");
      std::string want = bias ? std::string(stem) : std::string(stem) + ".weight";
      if (rest == want) types[{role, layer}] = t.type;
    }
  }
  if (!types.count({TensorRole::kTokenEmbd, -1})) {
    return error("{}: no tensor 'token_embd.weight'", file.path());
  }
  return TensorTypeFn([types = std::move(types)](TensorRole role, int64_t layer) {
    auto it = types.find({role, layer});
    if (it != types.end()) return it->second;
    if (role == TensorRole::kOutput) return types.at({TensorRole::kTokenEmbd, -1});  // tied
    // A matrix missing from a layer is reported by the model loader; count it like layer 0.
    auto first = types.find({role, 0});
    return first != types.end() ? first->second : GgmlType::kF32;
  });
}

Result<KvType> kv_type_from_name(std::string_view name) {
  const std::string n = lower(name);
  if (n == "f32") return KvType::kF32;
  if (n == "f16") return KvType::kF16;
  if (n == "bf16") return KvType::kBF16;
  if (n == "q8_0") return KvType::kQ8_0;
  if (n == "fp8" || n == "f8" || n == "fp8_e4m3") return KvType::kFP8;
  return usage_error("unknown KV type '{}' (f32, f16, bf16, q8_0, fp8)", name);
}

std::string_view kv_type_name(KvType type) {
  switch (type) {
    case KvType::kF32: return "f32";
    case KvType::kF16: return "f16";
    case KvType::kBF16: return "bf16";
    case KvType::kQ8_0: return "q8_0";
    case KvType::kFP8: return "fp8";
  }
  return "?";
}

double kv_bytes_per_element(KvType type) {
  switch (type) {
    case KvType::kF32: return 4.0;
    case KvType::kF16: case KvType::kBF16: return 2.0;
    case KvType::kQ8_0: return 34.0 / 32.0;
    case KvType::kFP8: return 1.0;
  }
  return 0.0;
}

double ModelCost::attention_flops_per_position() const {
  return 4.0 * static_cast<double>(config.n_layer) * static_cast<double>(config.q_dim());
}

double ModelCost::flops_per_token(int64_t context) const {
  return layer_flops_per_token + head_flops_per_row +
         attention_flops_per_position() * static_cast<double>(context);
}

Result<ModelCost> model_cost(const ModelConfig& cfg, const TensorTypeFn& types, KvType kv_type) {
  if (cfg.n_layer <= 0 || cfg.n_embd <= 0 || cfg.n_vocab <= 0 || cfg.n_head <= 0 ||
      cfg.n_head_kv <= 0 || cfg.head_dim <= 0 || cfg.n_ff <= 0) {
    return error("model '{}': incomplete shape (layers {}, embd {}, vocab {}, heads {}/{}, head_dim "
                 "{}, ff {})", cfg.name, cfg.n_layer, cfg.n_embd, cfg.n_vocab, cfg.n_head,
                 cfg.n_head_kv, cfg.head_dim, cfg.n_ff);
  }
  ModelCost m;
  m.config = cfg;
  m.kv_type = kv_type;
  const double embd = static_cast<double>(cfg.n_embd);
  const double vocab = static_cast<double>(cfg.n_vocab);

  // Token embedding: stored whole, one row read per token. Tied: it is also the output head.
  GgmlType embd_t = types(TensorRole::kTokenEmbd, -1);
  double embd_bytes = tensor_bytes(embd_t, cfg.n_vocab, cfg.n_embd);
  m.embd_row_bytes = tensor_bytes(embd_t, 1, cfg.n_embd);
  m.weight_file_bytes += embd_bytes;
  m.n_params += vocab * embd;
  double head_bytes = embd_bytes;
  if (!cfg.tied_embeddings) {
    head_bytes = tensor_bytes(types(TensorRole::kOutput, -1), cfg.n_vocab, cfg.n_embd);
    m.weight_file_bytes += head_bytes;
    m.n_params += vocab * embd;
  }
  double norm_bytes = tensor_bytes(types(TensorRole::kOutputNorm, -1), 1, cfg.n_embd);
  m.weight_file_bytes += norm_bytes;
  m.n_params += embd;
  m.weight_read_bytes = head_bytes + norm_bytes;
  m.head_flops_per_row = 2.0 * vocab * embd;

  const auto shapes = layer_shapes(cfg);
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    for (const auto& s : shapes) {
      double b = tensor_bytes(types(s.role, l), s.rows, s.cols);
      double elems = static_cast<double>(s.rows) * static_cast<double>(s.cols);
      m.weight_file_bytes += b;
      m.weight_read_bytes += b;
      m.n_params += elems;
      if (is_matrix(s.role)) {
        m.layer_flops_per_token += 2.0 * elems;
        m.activation_bytes_per_token += 4.0 * static_cast<double>(s.rows + s.cols);
      }
    }
  }
  m.head_activation_bytes = 4.0 * (embd + vocab);
  m.kv_bytes_per_token = 2.0 * static_cast<double>(cfg.n_layer) *
                         static_cast<double>(cfg.kv_dim()) * kv_bytes_per_element(kv_type);
  return m;
}

StepCost cost_of_step(const ModelCost& m, std::span<const SeqWork> seqs) {
  StepCost c;
  double n_tokens = 0;
  for (const auto& s : seqs) {
    if (s.n_new <= 0) continue;
    const double n_new = static_cast<double>(s.n_new);
    const double past = static_cast<double>(s.n_past);
    n_tokens += n_new;
    c.kv_read_bytes += (past + n_new) * m.kv_bytes_per_token;  // the sequence's KV, read once
    c.kv_write_bytes += n_new * m.kv_bytes_per_token;
    // Token i (1-based) of the chunk attends past + i positions: sum = n*past + n(n+1)/2.
    double positions = n_new * past + n_new * (n_new + 1.0) / 2.0;
    c.attention_flops += m.attention_flops_per_position() * positions;
    c.flops += n_new * m.layer_flops_per_token + m.head_flops_per_row;
    c.activation_bytes += n_new * m.activation_bytes_per_token + m.head_activation_bytes;
  }
  if (n_tokens > 0) c.weight_bytes = m.weight_read_bytes + n_tokens * m.embd_row_bytes;
  c.flops += c.attention_flops;
  return c;
}

StepCost cost_of_step(const ModelCost& m, int64_t batch, int64_t context) {
  if (batch <= 0) return {};
  SeqWork one{context > 0 ? context - 1 : 0, 1};
  StepCost s = cost_of_step(m, std::span<const SeqWork>(&one, 1));
  const double b = static_cast<double>(batch);
  // Every sequence adds its own KV, activations and FLOPs; the weights are shared.
  s.weight_bytes = m.weight_read_bytes + b * m.embd_row_bytes;
  s.kv_read_bytes *= b;
  s.kv_write_bytes *= b;
  s.activation_bytes *= b;
  s.flops *= b;
  s.attention_flops *= b;
  return s;
}

StepCost cost_of_prefill(const ModelCost& m, int64_t n_tokens) {
  SeqWork s{0, n_tokens};
  return cost_of_step(m, std::span<const SeqWork>(&s, 1));
}

}  // namespace ridge::model
