// Qwen3.5 (GGUF `qwen35`, `qwen35moe`; docs/reference/qwen35.md): three Gated DeltaNet layers
// (linear attention with a recurrent state) to every full-attention layer. The attention layers
// are Qwen3's with an output gate (attn_q holds each head's q, then its gate: 2 x q_dim rows) and
// partial NeoX rope; the linear layers' projections, conv and state parameters are bound here
// (their output projection ssm_out as wo). The norm before the FFN is post_attention_norm; the
// MoE form has qwen2moe's gated shared expert and renormalized top-k.
#include "model/arch.h"

namespace ridge::model {
namespace {

Status bind_linear_layer(WeightBinder& b, const ModelConfig& cfg, int64_t il, LayerWeights& l) {
  const int64_t d = cfg.n_embd, hv = cfg.ssm_n_v_heads;
  auto name = [il](std::string_view s) { return layer_tensor(il, s); };
  RIDGE_ASSIGN_OR_RETURN(l.ssm_qkv, b.matrix(name("attn_qkv.weight"), cfg.ssm_conv_dim(), d));
  RIDGE_ASSIGN_OR_RETURN(l.ssm_z, b.matrix(name("attn_gate.weight"), cfg.ssm_value_dim(), d));
  RIDGE_ASSIGN_OR_RETURN(l.ssm_beta, b.matrix(name("ssm_beta.weight"), hv, d));
  RIDGE_ASSIGN_OR_RETURN(l.ssm_alpha, b.matrix(name("ssm_alpha.weight"), hv, d));
  RIDGE_ASSIGN_OR_RETURN(l.ssm_conv, b.table(name("ssm_conv1d.weight"), cfg.ssm_conv_dim(), cfg.ssm_conv_kernel));
  RIDGE_ASSIGN_OR_RETURN(l.ssm_dt_bias, b.vector(name("ssm_dt.bias"), hv));
  RIDGE_ASSIGN_OR_RETURN(l.ssm_a, b.vector(name("ssm_a"), hv));
  RIDGE_ASSIGN_OR_RETURN(l.ssm_norm, b.vector(name("ssm_norm.weight"), cfg.ssm_head_dim));
  RIDGE_ASSIGN_OR_RETURN(l.wo, b.matrix(name("ssm_out.weight"), d, cfg.ssm_value_dim()));
  return ok_status();
}

// The first MTP block (n_layer), where the file has it: a full-attention block and its nextn tensors, the embedding,
// head and head norm the model's own where the block has none. Its matrices are not the
// trunk's step bytes: they count in mtp.matrix_bytes.
Status bind_mtp(WeightBinder& b, const ModelConfig& cfg, Weights& w) {
  const int64_t il = cfg.n_layer, d = cfg.n_embd;
  MtpWeights& m = w.mtp;
  const uint64_t trunk_bytes = w.matrix_bytes;
  auto name = [il](std::string_view s) { return layer_tensor(il, s); };
  RIDGE_RETURN_IF_ERROR(bind_layer(b, cfg, il, m.block));
  RIDGE_RETURN_IF_ERROR(bind_qk_norms(b, cfg, il, m.block));
  RIDGE_ASSIGN_OR_RETURN(m.eh_proj, b.matrix(name("nextn.eh_proj.weight"), d, 2 * d));
  RIDGE_ASSIGN_OR_RETURN(m.enorm, b.vector(name("nextn.enorm.weight"), d));
  RIDGE_ASSIGN_OR_RETURN(m.hnorm, b.vector(name("nextn.hnorm.weight"), d));
  RIDGE_ASSIGN_OR_RETURN(m.head_norm, b.optional_vector(name("nextn.shared_head_norm.weight"), d));
  if (!m.head_norm) m.head_norm = w.output_norm;
  RIDGE_ASSIGN_OR_RETURN(m.embed, b.optional_matrix(name("nextn.embed_tokens.weight"), cfg.n_vocab, d));
  if (m.embed.data == nullptr) {
    m.embed = w.token_embd;
  } else {
    w.matrix_bytes -= static_cast<uint64_t>(m.embed.rows) * m.embed.row_bytes;  // read a row per token
  }
  RIDGE_ASSIGN_OR_RETURN(m.head, b.optional_matrix(name("nextn.shared_head_head.weight"), cfg.n_vocab, d));
  if (m.head.data == nullptr) {
    m.head = w.output;
    w.matrix_bytes += static_cast<uint64_t>(m.head.rows) * m.head.row_bytes;
  }
  m.matrix_bytes = w.matrix_bytes - trunk_bytes;
  w.matrix_bytes = trunk_bytes;
  return ok_status();
}

Status bind_qwen35(WeightBinder& b, const ModelConfig& cfg, Weights& w) {
  for (int64_t il = 0; il < cfg.n_layer; ++il) {
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    RIDGE_RETURN_IF_ERROR(cfg.is_recurrent_layer(il) ? bind_linear_layer(b, cfg, il, l)
                                                     : bind_qk_norms(b, cfg, il, l));
  }
  // A file whose nextn blocks were left out (llama.cpp's converter --no-mtp) runs its trunk.
  const bool mtp = cfg.has_mtp() && b.has(layer_tensor(cfg.n_layer, "nextn.eh_proj.weight"));
  return mtp ? bind_mtp(b, cfg, w) : ok_status();
}

}  // namespace

const Architecture& qwen35_architecture() {
  static const Architecture kArch{"qwen35", bind_qwen35};
  return kArch;
}

const Architecture& qwen35moe_architecture() {
  static const Architecture kArch{"qwen35moe", bind_qwen35};
  return kArch;
}

}  // namespace ridge::model
