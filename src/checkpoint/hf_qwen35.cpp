#include "checkpoint/hf_qwen35.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "checkpoint/hf_convert.h"
#include "checkpoint/hf_experts.h"
#include "tensor/fp16.h"

namespace ridge::checkpoint {
namespace {

// Which blocks hold a tensor: all, the linear-attention or the full-attention ones (MTP blocks
// are full attention), those with a dense FFN or a mixture, the first MTP block.
enum class Where { kAll, kLinear, kFull, kDense, kMoe, kMtp };
struct Name {
  const char* hf;                // after "model.layers.N."
  const char* gguf;              // after "blk.N."
  Where where;
  const char* mtp_hf = nullptr;  // the MTP head's own name in the checkpoint
};
constexpr Name kBlock[] = {
    {"input_layernorm.weight", "attn_norm.weight", Where::kAll},
    // Qwen3.5's norm before the FFN (llama.cpp's qwen35 has no ffn_norm).
    {"post_attention_layernorm.weight", "post_attention_norm.weight", Where::kAll},
    {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight", Where::kLinear},
    {"linear_attn.in_proj_z.weight", "attn_gate.weight", Where::kLinear},
    {"linear_attn.in_proj_b.weight", "ssm_beta.weight", Where::kLinear},
    {"linear_attn.in_proj_a.weight", "ssm_alpha.weight", Where::kLinear},
    {"linear_attn.conv1d.weight", "ssm_conv1d.weight", Where::kLinear},
    {"linear_attn.dt_bias", "ssm_dt.bias", Where::kLinear},
    {"linear_attn.A_log", "ssm_a", Where::kLinear},
    {"linear_attn.norm.weight", "ssm_norm.weight", Where::kLinear},
    {"linear_attn.out_proj.weight", "ssm_out.weight", Where::kLinear},
    {"self_attn.q_proj.weight", "attn_q.weight", Where::kFull},  // each head's q, then its gate
    {"self_attn.k_proj.weight", "attn_k.weight", Where::kFull},
    {"self_attn.v_proj.weight", "attn_v.weight", Where::kFull},
    {"self_attn.o_proj.weight", "attn_output.weight", Where::kFull},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", Where::kFull},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", Where::kFull},
    {"mlp.gate_proj.weight", "ffn_gate.weight", Where::kDense},
    {"mlp.up_proj.weight", "ffn_up.weight", Where::kDense},
    {"mlp.down_proj.weight", "ffn_down.weight", Where::kDense},
    {"mlp.gate.weight", "ffn_gate_inp.weight", Where::kMoe},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight", Where::kMoe},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight", Where::kMoe},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight", Where::kMoe},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight", Where::kMoe},
    {"eh_proj.weight", "nextn.eh_proj.weight", Where::kMtp, "mtp.fc.weight"},
    {"enorm.weight", "nextn.enorm.weight", Where::kMtp, "mtp.pre_fc_norm_embedding.weight"},
    {"hnorm.weight", "nextn.hnorm.weight", Where::kMtp, "mtp.pre_fc_norm_hidden.weight"},
    {"shared_head.norm.weight", "nextn.shared_head_norm.weight", Where::kMtp, "mtp.norm.weight"},
};

bool is_full(const HfConfig& c, int64_t il) { return il >= c.n_layer || (il + 1) % c.full_attn_interval == 0; }

bool holds(const HfConfig& c, int64_t il, Where w) {
  switch (w) {
    case Where::kAll: return true;
    case Where::kLinear: return !is_full(c, il);
    case Where::kFull: return is_full(c, il);
    case Where::kDense: return c.n_expert == 0;
    case Where::kMoe: return c.n_expert > 0;
    case Where::kMtp: return il == c.n_layer;
  }
  return false;
}

// A checkpoint's tensor name as the text model's ("model.language_model.x" -> "model.x"), an MTP
// block's as a layer past the trunk ("mtp.layers.I.x" -> "model.layers.<n_layer + I>.x", the
// head's "mtp.fc.weight" -> "model.layers.<n_layer>.eh_proj.weight" ...), as llama.cpp's
// converter renames them; nullopt for the vision tower.
std::optional<std::string> text_name(const HfConfig& c, std::string n) {
  if (n.find("visual.") != std::string::npos) return std::nullopt;
  if (n.starts_with("model.language_model.")) {
    n = "model." + n.substr(std::strlen("model.language_model."));
  } else if (n.starts_with("language_model.")) {
    n = n.substr(std::strlen("language_model."));
  }
  if (n.starts_with("model.mtp.")) n = n.substr(std::strlen("model."));
  if (!n.starts_with("mtp.")) return n;
  static const std::regex layer(R"(mtp\.layers\.(\d{1,6})\.(.+))");
  std::smatch m;
  if (std::regex_match(n, m, layer)) {
    return "model.layers." + std::to_string(c.n_layer + std::stoll(m[1].str())) + "." + m[2].str();
  }
  for (const Name& e : kBlock) {
    if (e.mtp_hf != nullptr && n == e.mtp_hf) return "model.layers." + std::to_string(c.n_layer) + "." + e.hf;
  }
  return n;
}

std::string hf_display(const HfConfig& c, int64_t il, const Name& e) {
  if (il < c.n_layer) return "model.layers." + std::to_string(il) + "." + e.hf;
  if (e.mtp_hf != nullptr) return e.mtp_hf;
  return "mtp.layers." + std::to_string(il - c.n_layer) + "." + e.hf;
}

// What a tensor's values go through on the way: none, + 1 (an RMSNorm weight), -exp (A_log).
enum class Op { kCopy, kPlusOne, kNegExp };

// One tensor's conversion: its source seen as `rows` x `cols` elements (outermost first), the
// value heads moved (rows from `first` on in heads of `unit` rows, or each row's columns in
// heads of `unit`), its values transformed, written as F32 or in its own type.
struct Job {
  const Tensor* src = nullptr;
  Op op = Op::kCopy;
  bool f32 = false, move_heads = false, columns = false;
  int64_t rows = 0, cols = 0, first = 0, unit = 0, n_k = 1, n_v = 1;
};

// Hugging Face's value head for GGUF's value head g: Hugging Face groups the value heads by key
// head (key head h's Hv / Hk heads in a row), ggml tiles them (GGUF head g reads key head g % Hk).
int64_t hf_v_head(int64_t g, int64_t n_k, int64_t n_v) { return (g % n_k) * (n_v / n_k) + g / n_k; }

float element(Dtype d, const uint8_t* p) {
  uint16_t h;
  float f;
  switch (d) {
    case Dtype::kF16: std::memcpy(&h, p, 2); return fp16_to_f32(h);
    case Dtype::kBF16: std::memcpy(&h, p, 2); return bf16_to_f32(h);
    default: std::memcpy(&f, p, 4); return f;
  }
}

// As llama.cpp's converter computes it: BF16 is widened to F32 first, F16 stays F16 (torch
// rounds each F16 result), F32 is F32; exp as torch's.
float transformed(Dtype d, float x, Op op) {
  float y = x;
  if (op == Op::kPlusOne) y = x + 1.0f;
  if (op == Op::kNegExp) y = torch_expf(x);
  if (d == Dtype::kF16 && op != Op::kCopy) y = fp16_to_f32(f32_to_fp16(y));
  return op == Op::kNegExp ? -y : y;
}

Status fill(const Job& j, std::span<uint8_t> dst) {
  const size_t eb = dtype_bytes(j.src->dtype), row = static_cast<size_t>(j.cols) * eb;
  std::span<const uint8_t> in = j.src->data;
  std::vector<uint8_t> moved;
  if (j.move_heads && j.n_k != j.n_v) {
    moved.assign(in.begin(), in.end());
    const size_t head = static_cast<size_t>(j.unit) * (j.columns ? eb : row);
    for (int64_t r = 0; r < (j.columns ? j.rows : 1); ++r) {
      const size_t base = j.columns ? static_cast<size_t>(r) * row : static_cast<size_t>(j.first) * row;
      for (int64_t g = 0; g < j.n_v; ++g) {
        std::memcpy(moved.data() + base + static_cast<size_t>(g) * head,
                    in.data() + base + static_cast<size_t>(hf_v_head(g, j.n_k, j.n_v)) * head, head);
      }
    }
    in = moved;
  }
  if (!j.f32 || (j.src->dtype == Dtype::kF32 && j.op == Op::kCopy)) {
    std::memcpy(dst.data(), in.data(), dst.size());
    return ok_status();
  }
  for (size_t i = 0; i < in.size() / eb; ++i) {
    const float y = transformed(j.src->dtype, element(j.src->dtype, in.data() + i * eb), j.op);
    std::memcpy(dst.data() + 4 * i, &y, 4);
  }
  return ok_status();
}

// The conversion of tensor t, named `gguf` ("blk.N.x" or a global); the linear layers' tensors
// checked against config.json's sizes, since their value heads move.
Result<Job> plan(const HfConfig& c, const std::string& gguf, const Tensor& t) {
  Job j;
  j.src = &t;
  j.rows = t.shape.empty() ? 1 : t.shape[0];
  j.cols = j.rows > 0 ? t.n_elements() / j.rows : 0;
  j.n_k = c.ssm_n_k_heads;
  j.n_v = c.ssm_n_v_heads;
  const std::string s = gguf.starts_with("blk.") ? gguf.substr(gguf.find('.', 4) + 1) : gguf;
  const int64_t hd = c.ssm_head_dim, key = c.ssm_n_k_heads * hd, value = c.ssm_n_v_heads * hd;
  struct Linear {
    const char* name;
    int64_t rows, cols, first, unit;
    bool columns;
  };
  const Linear linear[] = {{"attn_qkv.weight", 2 * key + value, c.n_embd, 2 * key, hd, false},
                           {"attn_gate.weight", value, c.n_embd, 0, hd, false},
                           {"ssm_beta.weight", c.ssm_n_v_heads, c.n_embd, 0, 1, false},
                           {"ssm_alpha.weight", c.ssm_n_v_heads, c.n_embd, 0, 1, false},
                           {"ssm_a", c.ssm_n_v_heads, 1, 0, 1, false},
                           {"ssm_dt.bias", c.ssm_n_v_heads, 1, 0, 1, false},
                           {"ssm_conv1d.weight", 2 * key + value, c.ssm_conv_kernel, 2 * key, hd, false},
                           {"ssm_norm.weight", hd, 1, 0, 0, false},
                           {"ssm_out.weight", c.n_embd, value, 0, hd, true}};
  for (const Linear& l : linear) {
    if (s != l.name) continue;
    const bool conv = s == "ssm_conv1d.weight";
    const bool dims_ok = conv ? (t.shape.size() == 2 || (t.shape.size() == 3 && t.shape[1] == 1))
                              : t.shape.size() == (l.cols == 1 ? 1u : 2u);
    if (!dims_ok || j.rows != l.rows || j.cols != l.cols) {
      return error("tensor '{}': {} dimensions, {} x {} where config.json gives {} x {}", t.name, t.shape.size(),
                   j.rows, j.cols, l.rows, l.cols);
    }
    j.move_heads = l.unit > 0;
    j.first = l.first;
    j.unit = l.unit;
    j.columns = l.columns;
  }
  if (s == "ssm_a") j.op = Op::kNegExp;
  if (s.ends_with("norm.weight") && s != "ssm_norm.weight") j.op = Op::kPlusOne;  // stored as 1 + w
  // The types llama.cpp's converter forces to F32: vectors, norms, anything not a ".weight", the
  // conv taps and the routers.
  j.f32 = t.shape.size() <= 1 || !s.ends_with(".weight") || s.ends_with("_norm.weight") ||
          s == "ssm_conv1d.weight" || s == "ffn_gate_inp.weight" || s == "ffn_gate_inp_shexp.weight";
  if (t.shape.empty() || t.shape.size() > (s == "ssm_conv1d.weight" ? 3u : 2u)) {
    return error("tensor '{}': {} dimensions", t.name, t.shape.size());
  }
  return j;
}

// A layer's experts stacked in the checkpoint (transformers' fused form): gate_up_proj
// [n_expert, 2 n_ff_exp, n_embd], gate rows first, and down_proj [n_expert, n_embd, n_ff_exp].
Status add_fused_experts(const HfConfig& c, int64_t il, bool gate_up, const Tensor* t, gguf::Writer& w) {
  RIDGE_ASSIGN_OR_RETURN(const GgmlType type, gguf_type_of(*t));
  const int64_t e = c.n_expert, ff = c.n_ff_exp, d = c.n_embd;
  const std::vector<int64_t> want = gate_up ? std::vector<int64_t>{e, 2 * ff, d} : std::vector<int64_t>{e, d, ff};
  if (t->shape != want) {
    return error("tensor '{}': shape is not [{}, {}, {}] as config.json gives", t->name, want[0], want[1], want[2]);
  }
  const std::string p = "blk." + std::to_string(il) + ".";
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  if (!gate_up) {
    return w.add_tensor(p + "ffn_down_exps.weight", type, {u(ff), u(d), u(e)}, [t](std::span<uint8_t> dst) {
      std::memcpy(dst.data(), t->data.data(), dst.size());
      return Status();
    });
  }
  for (int64_t half = 0; half < 2; ++half) {
    const std::string name = p + (half == 0 ? "ffn_gate_exps.weight" : "ffn_up_exps.weight");
    RIDGE_RETURN_IF_ERROR(w.add_tensor(name, type, {u(d), u(ff), u(e)}, [t, e, half](std::span<uint8_t> dst) {
      const size_t part = dst.size() / static_cast<size_t>(e);  // one expert's ff rows
      for (int64_t x = 0; x < e; ++x) {
        std::memcpy(dst.data() + static_cast<size_t>(x) * part,
                    t->data.data() + static_cast<size_t>(2 * x + half) * part, part);
      }
      return Status();
    }));
  }
  return ok_status();
}

}  // namespace

float torch_expf(float d) {
  // SLEEF's xexpf: d = q ln2 + s (ln2 in two parts), a degree-7 polynomial in s, times 2^q.
  const int q = static_cast<int>(std::nearbyint(d * 1.442695040888963407359924681001892137426645954152985934135449406931f));
  float s = std::fma(static_cast<float>(q), -0.693145751953125f, d);
  s = std::fma(static_cast<float>(q), -1.428606765330187045e-06f, s);
  float u = 0.000198527617612853646278381f;
  for (const float c : {0.00139304355252534151077271f, 0.00833336077630519866943359f, 0.0416664853692054748535156f,
                        0.166666671633720397949219f, 0.5f}) {
    u = std::fma(u, s, c);
  }
  u = 1.0f + std::fma(s * s, u, s);
  const auto pow2 = [](int e) { return std::ldexp(1.0f, e); };
  u = u * pow2(q >> 1) * pow2(q - (q >> 1));
  if (d < -104.0f) return 0.0f;
  return d > 100.0f ? INFINITY : u;
}

bool is_qwen35(const HfConfig& c) { return c.gguf_arch == "qwen35" || c.gguf_arch == "qwen35moe"; }

Result<std::string> qwen35_tensor_name(const HfConfig& c, const std::string& hf_name) {
  const std::optional<std::string> n = text_name(c, hf_name);
  if (!n) return error("tensor '{}' is not the language model's", hf_name);
  if (*n == "model.embed_tokens.weight") return std::string("token_embd.weight");
  if (*n == "model.norm.weight") return std::string("output_norm.weight");
  if (*n == "lm_head.weight") return std::string("output.weight");
  static const std::regex layer(R"(model\.layers\.(\d{1,6})\.(.+))");
  std::smatch m;
  if (std::regex_match(*n, m, layer) && std::stoll(m[1].str()) < c.n_layer + c.n_mtp) {
    const int64_t il = std::stoll(m[1].str());
    for (const Name& e : kBlock) {
      if (m[2].str() != e.hf) continue;
      if (holds(c, il, e.where)) return "blk." + std::to_string(il) + "." + e.gguf;
      if (e.where == Where::kLinear || e.where == Where::kFull) {
        return error("tensor '{}': block {} is a {} layer (full_attention_interval {})", hf_name, il,
                     is_full(c, il) ? "full-attention" : "linear-attention", c.full_attn_interval);
      }
    }
  }
  return error("tensor '{}' is not one a {} checkpoint holds", hf_name, c.hf_architecture);
}

Status convert_qwen35(const HfConfig& cfg, const SafetensorsSet& set, gguf::Writer& w) {
  HfConfig c = cfg;
  if (c.n_mtp == 0) {  // none stated: the MTP blocks the checkpoint holds, as llama.cpp's converter counts them
    static const std::regex mtp(R"((model\.)?mtp\.layers\.(\d{1,6})\..+)");
    std::smatch m;
    for (const Tensor* t : set.tensors()) {
      if (std::regex_match(t->name, m, mtp)) c.n_mtp = std::max<int64_t>(c.n_mtp, std::stoll(m[2].str()) + 1);
    }
    if (c.n_mtp > 64) return error("the checkpoint holds {} MTP blocks", c.n_mtp);
  }
  const std::string& a = c.gguf_arch;
  const auto u32 = [](int64_t v) { return gguf::make_u32(static_cast<uint32_t>(v)); };
  w.set(a + ".block_count", u32(c.n_layer + c.n_mtp));
  if (c.n_mtp > 0) w.set(a + ".nextn_predict_layers", u32(c.n_mtp));
  w.set(a + ".rope.dimension_count", u32(c.rope_dims));
  w.set(a + ".rope.dimension_sections",
        gguf::make_i32_array(std::vector<int32_t>(c.rope_sections.begin(), c.rope_sections.end())));
  w.set(a + ".full_attention_interval", u32(c.full_attn_interval));
  w.set(a + ".ssm.conv_kernel", u32(c.ssm_conv_kernel));
  w.set(a + ".ssm.state_size", u32(c.ssm_head_dim));
  w.set(a + ".ssm.group_count", u32(c.ssm_n_k_heads));
  w.set(a + ".ssm.time_step_rank", u32(c.ssm_n_v_heads));
  w.set(a + ".ssm.inner_size", u32(c.ssm_n_v_heads * c.ssm_head_dim));

  HfConfig blocks = c;  // the experts' layers: the trunk's and the MTP blocks'
  blocks.n_layer = c.n_layer + c.n_mtp;
  ExpertStacks experts;
  bool per_expert = false;
  std::map<int64_t, int> fused;  // layer -> 1 (gate_up_proj) | 2 (down_proj)
  std::set<std::string> written;
  static const std::regex fused_name(R"(model\.layers\.(\d{1,6})\.mlp\.experts\.(gate_up|down)_proj(\.weight)?)");
  for (const Tensor* t : set.tensors()) {
    if (t->name.ends_with("rotary_emb.inv_freq")) continue;
    const std::optional<std::string> n = text_name(c, t->name);
    if (!n) continue;  // the vision tower
    if (*n == "lm_head.weight" && c.tied_embeddings) continue;
    std::smatch m;
    if (const std::optional<ExpertMatrix> e = expert_matrix(*n)) {
      RIDGE_RETURN_IF_ERROR(experts.add(blocks, *e, t));
      per_expert = true;
      continue;
    }
    if (std::regex_match(*n, m, fused_name) && c.n_expert > 0 && std::stoll(m[1].str()) < blocks.n_layer) {
      const int64_t il = std::stoll(m[1].str());
      const bool gate_up = m[2].str() == "gate_up";
      RIDGE_RETURN_IF_ERROR(add_fused_experts(c, il, gate_up, t, w));
      fused[il] |= gate_up ? 1 : 2;
      continue;
    }
    RIDGE_ASSIGN_OR_RETURN(const std::string name, qwen35_tensor_name(c, t->name));
    RIDGE_ASSIGN_OR_RETURN(const Job job, plan(c, name, *t));
    RIDGE_ASSIGN_OR_RETURN(const GgmlType own, gguf_type_of(*t));
    std::vector<uint64_t> shape(t->shape.rbegin(), t->shape.rend());  // ggml's order
    // conv1d [conv_dim, 1, K] as [K, conv_dim]; the shared expert's gate stays [n_embd, 1], as
    // llama.cpp's converter writes it.
    if (name.ends_with("ssm_conv1d.weight")) shape = {shape.front(), shape.back()};
    RIDGE_RETURN_IF_ERROR(w.add_tensor(name, job.f32 ? GgmlType::kF32 : own, shape,
                                       [job](std::span<uint8_t> dst) { return fill(job, dst); }));
    written.insert(name);
  }
  if (per_expert && !fused.empty()) return error("the checkpoint mixes per-expert and stacked expert tensors");
  if (per_expert) RIDGE_RETURN_IF_ERROR(experts.write(blocks, w));
  const auto missing = [](const std::string& hf, const std::string& gguf) {
    return error("the checkpoint has no {} (GGUF {})", hf, gguf);
  };
  if (!written.contains("token_embd.weight")) return missing("model.embed_tokens.weight", "token_embd.weight");
  if (!written.contains("output_norm.weight")) return missing("model.norm.weight", "output_norm.weight");
  if (!c.tied_embeddings && !written.contains("output.weight")) {
    return error("the checkpoint has no lm_head.weight and config.json does not tie it to the embeddings");
  }
  for (int64_t il = 0; il < blocks.n_layer; ++il) {
    for (const Name& e : kBlock) {
      const std::string gguf = "blk." + std::to_string(il) + "." + e.gguf;
      if (holds(c, il, e.where) && !written.contains(gguf)) return missing(hf_display(c, il, e), gguf);
    }
    if (c.n_expert > 0 && !per_expert && fused[il] != 3) {
      const std::string p = il < c.n_layer ? "model.layers." + std::to_string(il) : "mtp.layers." + std::to_string(il - c.n_layer);
      return missing(p + ".mlp.experts." + ((fused[il] & 1) ? "down_proj" : "gate_up_proj") + " (or its experts one by one)",
                     "blk." + std::to_string(il) + ".ffn_*_exps.weight");
    }
  }
  return ok_status();
}

}  // namespace ridge::checkpoint
