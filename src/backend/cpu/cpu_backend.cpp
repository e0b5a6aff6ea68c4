#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/weight_layout.h"
#include "backend/cpu/for_rows.h"
#include "backend/cpu/gated_delta_net.h"
#include "backend/cpu/gated_ffn.h"
#include "backend/cpu/moe_ffn.h"
#include "backend/cpu/paged_attention.h"
#include "model/ffn.h"
#include "model/ops.h"

namespace ridge::backend {



void CpuBackend::begin_step(const model::Batch& batch) {
  step_ = &batch;
  step_max_context_ = 0;
  for (int32_t c : batch.context_lens) step_max_context_ = std::max<int64_t>(step_max_context_, c);
}

void CpuBackend::embed(const model::EmbedOp& op) {
  const model::Batch& b = *step_;
  const int64_t d = op.d;
  const model::ModelConfig& cfg = *op.cfg;
  const int64_t half = cfg.rope_dims / 2, half_swa = cfg.swa_rope_dims() / 2;
  cpu::for_rows(*pool_, b.n_tokens(), d, [&](int64_t t) {
    const auto row = static_cast<size_t>(t);
    float* x = op.x + t * d;
    kernels::dequantize_weight_row(*k_, *op.table, static_cast<int64_t>(b.tokens[row]), x);
    if (op.scale != 1.0f) {
      for (int64_t i = 0; i < d; ++i) x[i] *= op.scale;
    }
    if (op.cos == nullptr) return;
    const int64_t pos = b.positions[row];
    model::rope_cos_sin(cfg.rope_dims, cfg.rope_theta, cfg.rope_freq_scale, op.rope_factors,
                        *op.yarn, pos, op.cos + t * half, op.sin + t * half);
    if (op.cos_swa != nullptr) {
      model::rope_cos_sin(cfg.swa_rope_dims(), cfg.swa_rope_theta(), cfg.swa_rope_freq_scale(),
                          op.rope_factors_swa, *op.yarn, pos, op.cos_swa + t * half_swa,
                          op.sin_swa + t * half_swa);
    }
  });
}

void CpuBackend::rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t d,
                          float eps) {
  cpu::for_rows(*pool_, rows, d,
           [&](int64_t t) { model::rms_norm(x + t * d, w, y + t * d, d, eps); });
}

void CpuBackend::matmul(const kernels::WeightView& w, const float* x, int64_t ldx, int64_t m,
                        float* y, int64_t ldy) {
  k_->matmul(w, x, ldx, m, y, ldy, *pool_);
}

void CpuBackend::matmul_group(std::span<const kernels::MatmulTarget> targets, const float* x,
                              int64_t ldx, int64_t m) {
  k_->matmul_group(targets, x, ldx, m, *pool_, nullptr);
}

void CpuBackend::attention_input(const model::AttentionInputOp& op) {
  const model::Batch& b = *step_;
  const int64_t hd = op.head_dim, qd = op.n_head * hd, kvd = op.n_head_kv * hd;
  const int64_t half = op.rope_dims / 2;
  const bool with_kv = op.cache != nullptr;
  cpu::for_rows(*pool_, b.n_tokens(), qd + 2 * kvd, [&](int64_t t) {
    float* q = op.q + t * qd;   // [n_head, head_dim]
    if (op.q_gate != nullptr) {
      const float* qg = op.q_gate + t * 2 * qd;
      for (int64_t h = 0; h < op.n_head; ++h) {
        std::memcpy(q + h * hd, qg + 2 * h * hd, static_cast<size_t>(hd) * sizeof(float));
      }
    }
    if (op.bq != nullptr) model::add_inplace(q, op.bq, qd);
    if (op.q_norm != nullptr) {
      for (int64_t h = 0; h < op.n_head; ++h) model::rms_norm(q + h * hd, op.q_norm, q + h * hd, hd, op.eps);
    }
    const float* cs = op.cos + t * half;
    const float* sn = op.sin + t * half;
    model::rope(q, op.n_head, hd, op.rope_dims, cs, sn, op.rope_layout);
    if (!with_kv) return;
    float* k = op.k + t * kvd;  // [n_head_kv, head_dim]
    float* v = op.v + t * kvd;  // [n_head_kv, head_dim]
    if (op.v_from_k) std::memcpy(v, k, static_cast<size_t>(kvd) * sizeof(float));
    if (op.bk != nullptr) model::add_inplace(k, op.bk, kvd);
    if (op.bv != nullptr) model::add_inplace(v, op.bv, kvd);
    if (op.k_norm != nullptr) {
      for (int64_t h = 0; h < op.n_head_kv; ++h) model::rms_norm(k + h * hd, op.k_norm, k + h * hd, hd, op.eps);
    }
    if (op.v_norm) {
      for (int64_t h = 0; h < op.n_head_kv; ++h) model::rms_norm(v + h * hd, nullptr, v + h * hd, hd, op.eps);
    }
    model::rope(k, op.n_head_kv, hd, op.rope_dims, cs, sn, op.rope_layout);
    op.cache->write(op.kv_layer, b.slots_of(op.cache->space_of(op.kv_layer))[static_cast<size_t>(t)], k, v);
  });
}

void CpuBackend::attention(const model::AttentionOp& op, const float* q_gate) {
  cpu::AttentionArgs a;
  static_cast<model::AttentionOp&>(a) = op;
  a.batch = step_;
  a.kernels = k_;
  a.scratch_per_thread = cpu::attention_scratch_floats(op.n_head, op.n_head_kv, op.head_dim,
                                                       op.cache->block_size(), step_max_context_);
  const auto need = static_cast<size_t>(a.scratch_per_thread * pool_->size());
  if (attn_scratch_.size() < need) attn_scratch_.resize(need);
  a.scratch = attn_scratch_.data();
  cpu::paged_attention(a, *pool_);
  if (q_gate == nullptr) return;
  const int64_t hd = a.head_dim, qd = a.n_head * hd;
  cpu::for_rows(*pool_, step_->n_tokens(), 2 * qd, [&](int64_t t) {  // out *= sigmoid(gate), by head
    float* o = a.out + t * qd;
    const float* qg = q_gate + t * 2 * qd;
    for (int64_t h = 0; h < a.n_head; ++h) {
      for (int64_t i = 0; i < hd; ++i) o[h * hd + i] *= 1.0f / (1.0f + std::exp(-qg[(2 * h + 1) * hd + i]));
    }
  });
}

void CpuBackend::residual(const model::ResidualOp& op) {
  const int64_t d = op.d;
  cpu::for_rows(*pool_, op.m, op.next_norm != nullptr ? 2 * d : d, [&](int64_t t) {
    float* p = op.proj + t * d;
    float* x = op.x + t * d;
    if (op.bias != nullptr) model::add_inplace(p, op.bias, d);
    if (op.post_norm != nullptr) model::rms_norm(p, op.post_norm, p, d, op.eps);
    model::add_inplace(x, p, d);
    if (op.next_norm != nullptr) model::rms_norm(x, op.next_norm, op.xn + t * d, d, op.eps);
  });
}

void CpuBackend::gated_ffn(const model::GatedFfn& w, const float* x, int64_t ldx, int64_t m,
                           float* gate_buf, float* up_buf, float* out, int64_t ldo) {
  cpu::gated_ffn(*k_, w, x, ldx, m, gate_buf, up_buf, out, ldo, *pool_);
}

void CpuBackend::moe_ffn(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t il,
                         int64_t m, model::Workspace& ws, float* out) {
  cpu::moe_ffn(cfg, l, il, *k_, m, ws, out, *pool_);
}

void CpuBackend::begin_recurrent(kv::RecurrentState& states, model::Workspace& ws) {
  cpu::begin_recurrent_step(*step_, states, ws);
}

void CpuBackend::gated_delta_net(const model::ModelConfig& cfg, const model::LayerWeights& l,
                                 int64_t il, kv::RecurrentState& states, model::Workspace& ws) {
  cpu::gated_delta_net(cfg, l, il, *k_, *step_, states, ws, *pool_);
}

void CpuBackend::end_recurrent(kv::RecurrentState& states) {
  cpu::end_recurrent_step(*step_, states);
}

void CpuBackend::copy_rows(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows,
                           int64_t width) {
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * ldd, src + r * lds, static_cast<size_t>(width) * sizeof(float));
  }
}

void CpuBackend::previous_rows(const float* rows, const float* prev, float* out, int64_t d) {
  const model::Batch& b = *step_;
  const auto bytes = static_cast<size_t>(d) * sizeof(float);
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    const int32_t seq = b.seq_index[static_cast<size_t>(t)];
    float* o = out + t * d;
    if (t > 0 && b.seq_index[static_cast<size_t>(t - 1)] == seq) {
      std::memcpy(o, rows + (t - 1) * d, bytes);
    } else if (prev != nullptr) {
      std::memcpy(o, prev + static_cast<int64_t>(seq) * d, bytes);
    } else {
      std::memset(o, 0, bytes);
    }
  }
}

void CpuBackend::keep_output_rows(std::span<const model::RowBuffer> buffers) {
  const model::Batch& b = *step_;
  int64_t m = 0;
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    if (!b.need_logits[static_cast<size_t>(t)]) continue;
    if (m != t) {
      for (const model::RowBuffer& r : buffers) {
        std::memmove(r.data + m * r.width, r.data + t * r.width, static_cast<size_t>(r.width) * sizeof(float));
      }
    }
    ++m;
  }
}

void CpuBackend::scale(float* x, int64_t rows, int64_t n, float s) {
  cpu::for_rows(*pool_, rows, n, [&](int64_t t) {
    float* r = x + t * n;
    for (int64_t i = 0; i < n; ++i) r[i] *= s;
  });
}

void CpuBackend::geglu(const float* gate, const float* up, float* out, int64_t rows, int64_t n) {
  cpu::for_rows(*pool_, rows, n, [&](int64_t t) {
    for (int64_t i = t * n; i < (t + 1) * n; ++i) out[i] = model::geglu(gate[i], up[i]);
  });
}

void CpuBackend::per_layer_inputs(const model::PerLayerInputOp& op) {
  const model::Batch& b = *step_;
  const int64_t p = op.p, width = op.n_layer * p;
  const float proj_scale = 1.0f / std::sqrt(static_cast<float>(op.n_embd));
  const float table_scale = std::sqrt(static_cast<float>(p));
  const float mix_scale = 1.0f / std::sqrt(2.0f);
  cpu::for_rows(*pool_, b.n_tokens(), width, [&](int64_t t) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(width));
    kernels::dequantize_weight_row(*k_, *op.table, static_cast<int64_t>(b.tokens[static_cast<size_t>(t)]), row.data());
    float* pr = op.proj + t * width;
    for (int64_t l = 0; l < op.n_layer; ++l) {
      float* piece = pr + l * p;
      for (int64_t i = 0; i < p; ++i) piece[i] *= proj_scale;
      model::rms_norm(piece, op.proj_norm, piece, p, op.eps);
      float* out = op.out + l * op.ld_layer + t * p;
      for (int64_t i = 0; i < p; ++i) out[i] = (piece[i] + row[static_cast<size_t>(l * p + i)] * table_scale) * mix_scale;
    }
  });
}

void CpuBackend::softcap(float* z, int64_t rows, int64_t n, float cap) {
  cpu::for_rows(*pool_, rows, n, [&](int64_t t) {
    float* r = z + t * n;
    for (int64_t i = 0; i < n; ++i) r[i] = cap * std::tanh(r[i] / cap);
  });
}

}  // namespace ridge::backend
