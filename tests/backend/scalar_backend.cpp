#include "scalar_backend.h"

#include "guarded_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <vector>

#include "backend/registry.h"
#include "kernels/weight_layout.h"
#include "model/ffn.h"
#include "backend/cpu/gated_delta_net.h"
#include "backend/cpu/moe_ffn.h"
#include "model/ops.h"

namespace ridge::backend::testing {
namespace {

// y = x / sqrt(mean(x^2) + eps) * w over n values (y may be x).
void scalar_rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * (w != nullptr ? w[i] : 1.0f);
}

float scalar_dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Activations the ops take are the backend's memory, and so is a KV cache's storage (one buffer
// with K and V: its first K block stands for it); checked when the guarded memory is strict.
void on_device(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers) GuardedMemory::instance().expect_held(p);
}

float scalar_sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

Result<std::unique_ptr<model::Backend>> make_scalar(const BackendParams& p) {
  if (p.kernels != nullptr && p.kernels->isa != kernels::Isa::kRef) {
    return error(
        "backend {}: reads weights in the ref kernel table's row layout; bind the "
        "model for kernels_for(ref), not {}",
        kScalarBackendName, kernels::isa_name(p.kernels->isa));
  }
  return std::unique_ptr<model::Backend>(std::make_unique<ScalarBackend>());
}

Result<DeviceMemory*> guarded_memory(int /*device*/) { return &GuardedMemory::instance(); }

const bool kScalarRegistered = register_backend(kScalarBackendName, make_scalar, guarded_memory);

}  // namespace

ScalarBackend::ScalarBackend() : ref_(&kernels::kernels_for(kernels::Isa::kRef)), pool_(1) {
  (void)kScalarRegistered;
}

DeviceMemory& ScalarBackend::memory() { return GuardedMemory::instance(); }

Status ScalarBackend::load_weights(const model::Weights& weights) {
  return weights_.load(weights, GuardedMemory::instance());
}

const void* ScalarBackend::loaded_bytes(const void* p) const {
  if (p == nullptr) return nullptr;
  if (const void* copy = weights_.find(p)) return copy;
  if (GuardedMemory::instance().strict()) {
    std::fprintf(stderr, "scalar backend: a weight at %p that load_weights was not given\n", p);
    std::abort();
  }
  return p;  // an op test's own weights
}

kernels::WeightView ScalarBackend::loaded(const kernels::WeightView& w) const {
  kernels::WeightView d = w;
  d.data = loaded_bytes(w.data);
  return d;
}

void ScalarBackend::embed(const model::EmbedOp& op) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({op.x, op.cos, op.sin, op.cos_swa, op.sin_swa});
  const kernels::WeightView table = loaded(*op.table);
  const float* rope_factors = loaded(op.rope_factors);
  const float* rope_factors_swa = loaded(op.rope_factors_swa);
  const model::Batch& b = *step_;
  const model::ModelConfig& cfg = *op.cfg;
  const int64_t half = cfg.rope_dims / 2, half_swa = cfg.swa_rope_dims() / 2;
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    const auto row = static_cast<size_t>(t);
    float* x = op.x + t * op.d;
    kernels::dequantize_weight_row(*ref_, table, b.tokens[row], x);
    for (int64_t i = 0; i < op.d; ++i) x[i] *= op.scale;
    // The rotary tables are the model's definition (model::rope_cos_sin), not an op's choice.
    if (op.cos == nullptr) continue;
    const int64_t pos = b.positions[row];
    model::rope_cos_sin(cfg.rope_dims, cfg.rope_theta, cfg.rope_freq_scale, rope_factors,
                        *op.yarn, pos, op.cos + t * half, op.sin + t * half);
    if (op.cos_swa != nullptr) {
      model::rope_cos_sin(cfg.swa_rope_dims(), cfg.swa_rope_theta(), cfg.swa_rope_freq_scale(),
                          rope_factors_swa, *op.yarn, pos, op.cos_swa + t * half_swa,
                          op.sin_swa + t * half_swa);
    }
  }
}

void ScalarBackend::rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t d,
                             float eps) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({x, y});
  w = loaded(w);
  for (int64_t t = 0; t < rows; ++t) scalar_rms_norm(x + t * d, w, y + t * d, d, eps);
}

void ScalarBackend::matmul(const kernels::WeightView& weight, const float* x, int64_t ldx, int64_t m,
                           float* y, int64_t ldy) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({x, y});
  const kernels::WeightView w = loaded(weight);
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t j = 0; j < w.rows; ++j) {
    kernels::dequantize_weight_row(*ref_, w, j, row.data());
    for (int64_t i = 0; i < m; ++i) y[i * ldy + j] = scalar_dot(x + i * ldx, row.data(), w.cols);
  }
}

void ScalarBackend::matmul_group(std::span<const kernels::MatmulTarget> targets, const float* x,
                                 int64_t ldx, int64_t m) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({x});
  for (const kernels::MatmulTarget& t : targets) matmul(*t.w, x, ldx, m, t.y, t.ldy);
}

void ScalarBackend::attention_input(const model::AttentionInputOp& in) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({in.q, in.k, in.v, in.q_gate, in.cos, in.sin,
             in.cache != nullptr ? in.cache->k_block(in.kv_layer, 0, 0) : nullptr});
  model::AttentionInputOp op = in;
  op.bq = loaded(in.bq);
  op.bk = loaded(in.bk);
  op.bv = loaded(in.bv);
  op.q_norm = loaded(in.q_norm);
  op.k_norm = loaded(in.k_norm);
  const model::Batch& b = *step_;
  const int64_t hd = op.head_dim, qd = op.n_head * hd, kvd = op.n_head_kv * hd;
  const int64_t half = op.rope_dims / 2;
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    float* q = op.q + t * qd;
    if (op.q_gate != nullptr) {  // each head's q, then its gate
      for (int64_t h = 0; h < op.n_head; ++h) {
        for (int64_t i = 0; i < hd; ++i) q[h * hd + i] = op.q_gate[t * 2 * qd + 2 * h * hd + i];
      }
    }
    for (int64_t i = 0; op.bq != nullptr && i < qd; ++i) q[i] += op.bq[i];
    for (int64_t h = 0; op.q_norm != nullptr && h < op.n_head; ++h) {
      scalar_rms_norm(q + h * hd, op.q_norm, q + h * hd, hd, op.eps);
    }
    model::rope(q, op.n_head, hd, op.rope_dims, op.cos + t * half, op.sin + t * half,
                op.rope_layout);
    if (op.cache == nullptr) continue;  // the layer reads another layer's KV
    float* k = op.k + t * kvd;
    float* v = op.v + t * kvd;
    for (int64_t i = 0; op.v_from_k && i < kvd; ++i) v[i] = k[i];
    for (int64_t i = 0; op.bk != nullptr && i < kvd; ++i) k[i] += op.bk[i];
    for (int64_t i = 0; op.bv != nullptr && i < kvd; ++i) v[i] += op.bv[i];
    for (int64_t h = 0; op.k_norm != nullptr && h < op.n_head_kv; ++h) {
      scalar_rms_norm(k + h * hd, op.k_norm, k + h * hd, hd, op.eps);
    }
    for (int64_t h = 0; op.v_norm && h < op.n_head_kv; ++h) {
      scalar_rms_norm(v + h * hd, nullptr, v + h * hd, hd, op.eps);
    }
    model::rope(k, op.n_head_kv, hd, op.rope_dims, op.cos + t * half, op.sin + t * half,
                op.rope_layout);
    op.cache->write(op.kv_layer, b.slots_of(op.cache->space_of(op.kv_layer))[static_cast<size_t>(t)], k, v);
  }
}

// A plain softmax attention per token and head over the positions the token sees, K and V read
// row by row from the paged cache in its stored type.
void ScalarBackend::attention(const model::AttentionOp& op, const float* q_gate) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({op.q, op.out, q_gate, op.cache->k_block(op.layer, 0, 0)});
  model::AttentionOp a = op;
  a.sinks = loaded(op.sinks);
  const model::Batch& b = *step_;
  const kv::KvCache& cache = *a.cache;
  const int64_t hd = a.head_dim, qd = a.n_head * hd, group = a.n_head / a.n_head_kv;
  const int64_t bs = cache.block_size();
  const auto row_bytes = static_cast<int64_t>(cache.row_bytes(a.layer));
  std::vector<float> kr(static_cast<size_t>(hd)), vr(static_cast<size_t>(hd));
  auto row_of = [&](const void* block, int64_t off) {
    return static_cast<const uint8_t*>(block) + off * row_bytes;
  };
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    const auto table = b.block_table(b.seq_index[static_cast<size_t>(t)], cache.space_of(a.layer));
    const int64_t pos = b.positions[static_cast<size_t>(t)];
    const int64_t first = a.window > 0 ? std::max<int64_t>(0, pos - a.window + 1) : 0;
    std::vector<float> p(static_cast<size_t>(pos + 1 - first));
    for (int64_t h = 0; h < a.n_head; ++h) {
      const int64_t kvh = h / group;
      const float* q = a.q + t * qd + h * hd;
      float mx = a.sinks != nullptr ? a.sinks[h] : -INFINITY;
      for (int64_t j = first; j <= pos; ++j) {
        const int64_t block = table[static_cast<size_t>(j / bs)];
        kv::kv_load_row(cache.type(), row_of(cache.k_block(a.layer, block, kvh), j % bs), kr.data(),
                        hd);
        float s = scalar_dot(q, kr.data(), hd) * a.scale;
        if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
        p[static_cast<size_t>(j - first)] = s;
        mx = std::max(mx, s);
      }
      float sum = a.sinks != nullptr ? std::exp(a.sinks[h] - mx) : 0.0f;
      for (float& s : p) sum += (s = std::exp(s - mx));
      float* o = a.out + t * qd + h * hd;
      std::fill(o, o + hd, 0.0f);
      for (int64_t j = first; j <= pos; ++j) {
        const int64_t block = table[static_cast<size_t>(j / bs)];
        kv::kv_load_row(cache.type(), row_of(cache.v_block(a.layer, block, kvh), j % bs), vr.data(),
                        hd);
        const float w = p[static_cast<size_t>(j - first)] / sum;
        for (int64_t i = 0; i < hd; ++i) o[i] += w * vr[static_cast<size_t>(i)];
      }
      if (q_gate != nullptr) {
        const float* g = q_gate + t * 2 * qd + (2 * h + 1) * hd;
        for (int64_t i = 0; i < hd; ++i) o[i] *= scalar_sigmoid(g[i]);
      }
    }
  }
}

void ScalarBackend::residual(const model::ResidualOp& in) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({in.proj, in.x, in.xn});
  model::ResidualOp op = in;
  op.bias = loaded(in.bias);
  op.post_norm = loaded(in.post_norm);
  op.next_norm = loaded(in.next_norm);
  const int64_t d = op.d;
  for (int64_t t = 0; t < op.m; ++t) {
    float* p = op.proj + t * d;
    float* x = op.x + t * d;
    for (int64_t i = 0; op.bias != nullptr && i < d; ++i) p[i] += op.bias[i];
    if (op.post_norm != nullptr) scalar_rms_norm(p, op.post_norm, p, d, op.eps);
    for (int64_t i = 0; i < d; ++i) x[i] += p[i];
    if (op.next_norm != nullptr) scalar_rms_norm(x, op.next_norm, op.xn + t * d, d, op.eps);
  }
}

void ScalarBackend::gated_ffn(const model::GatedFfn& ffn, const float* x, int64_t ldx, int64_t m,
                              float* gate_buf, float* up_buf, float* out, int64_t ldo) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({x, gate_buf, up_buf, out});
  model::GatedFfn w = ffn;  // its matrices are loaded by matmul
  w.gate_bias = loaded(ffn.gate_bias);
  w.up_bias = loaded(ffn.up_bias);
  w.down_bias = loaded(ffn.down_bias);
  const int64_t ff = w.gate->rows;
  matmul(*w.gate, x, ldx, m, gate_buf, ff);
  matmul(*w.up, x, ldx, m, up_buf, ff);
  for (int64_t t = 0; t < m; ++t) {
    float* g = gate_buf + t * ff;
    const float* u = up_buf + t * ff;
    for (int64_t j = 0; j < ff; ++j) {
      const float gj = g[j] + (w.gate_bias != nullptr ? w.gate_bias[j] : 0.0f);
      const float uj = u[j] + (w.up_bias != nullptr ? w.up_bias[j] : 0.0f);
      switch (w.act) {
        case model::FfnActivation::kSwiglu:
          g[j] = gj * scalar_sigmoid(gj) * uj;
          break;
        // The two activations whose rounding is the model's definition (gemma's f16 GELU table,
        // gpt-oss's clamps): the model's per-element functions.
        case model::FfnActivation::kGeglu:
          g[j] = model::geglu(gj, uj);
          break;
        case model::FfnActivation::kSwigluOai:
          g[j] = model::swiglu_oai(gj, uj);
          break;
      }
    }
  }
  matmul(*w.down, gate_buf, ff, m, out, ldo);
  for (int64_t t = 0; w.down_bias != nullptr && t < m; ++t) {
    for (int64_t j = 0; j < w.down->rows; ++j) out[t * ldo + j] += w.down_bias[j];
  }
}

// The whole ops (the MoE FFN, the Gated DeltaNet layer and the recurrent state's bookkeeping)
// are not written again here: they run the model's own functions with the ref kernel table on
// this backend's private 1-thread pool. What they compute is checked against llama.cpp and
// their own references in tests/model (moe_test, delta_net_test).
void ScalarBackend::moe_ffn(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t il,
                            int64_t m, model::Workspace& ws, float* out) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({out});
  cpu::moe_ffn(cfg, l, il, *ref_, m, ws, out, pool_);
}

void ScalarBackend::begin_recurrent(kv::RecurrentState& states, model::Workspace& ws) {
  GuardedMemory::Open open(GuardedMemory::instance());
  cpu::begin_recurrent_step(*step_, states, ws);
}

void ScalarBackend::gated_delta_net(const model::ModelConfig& cfg, const model::LayerWeights& l,
                                    int64_t il, kv::RecurrentState& states, model::Workspace& ws) {
  GuardedMemory::Open open(GuardedMemory::instance());
  cpu::gated_delta_net(cfg, l, il, *ref_, *step_, states, ws, pool_);
}

void ScalarBackend::end_recurrent(kv::RecurrentState& states) {
  GuardedMemory::Open open(GuardedMemory::instance());
  cpu::end_recurrent_step(*step_, states);
}

void ScalarBackend::copy_rows(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows,
                              int64_t width) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({src, dst});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < width; ++i) dst[r * ldd + i] = src[r * lds + i];
  }
}

void ScalarBackend::previous_rows(const float* rows, const float* prev, float* out, int64_t d) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({rows, out});
  const model::Batch& b = *step_;
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    const int32_t seq = b.seq_index[static_cast<size_t>(t)];
    const bool same = t > 0 && b.seq_index[static_cast<size_t>(t - 1)] == seq;
    for (int64_t i = 0; i < d; ++i) {
      out[t * d + i] = same ? rows[(t - 1) * d + i] : prev != nullptr ? prev[seq * d + i] : 0.0f;
    }
  }
}

void ScalarBackend::keep_output_rows(std::span<const model::RowBuffer> buffers) {
  GuardedMemory::Open open(GuardedMemory::instance());
  for (const model::RowBuffer& r : buffers) on_device({r.data});
  const model::Batch& b = *step_;
  int64_t m = 0;
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    if (b.need_logits[static_cast<size_t>(t)] == 0) continue;
    for (const model::RowBuffer& r : buffers) {
      for (int64_t i = 0; i < r.width && m != t; ++i) r.data[m * r.width + i] = r.data[t * r.width + i];
    }
    ++m;
  }
}

void ScalarBackend::softcap(float* z, int64_t rows, int64_t n, float cap) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({z});
  for (int64_t i = 0; i < rows * n; ++i) z[i] = cap * std::tanh(z[i] / cap);
}

void ScalarBackend::scale(float* x, int64_t rows, int64_t n, float s) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({x});
  for (int64_t i = 0; i < rows * n; ++i) x[i] *= s;
}

void ScalarBackend::geglu(const float* gate, const float* up, float* out, int64_t rows, int64_t n) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({gate, up, out});
  for (int64_t i = 0; i < rows * n; ++i) out[i] = model::geglu(gate[i], up[i]);
}

// Each layer's piece of the projection normed and mixed with the token's table row, one value
// at a time.
void ScalarBackend::per_layer_inputs(const model::PerLayerInputOp& op) {
  GuardedMemory::Open open(GuardedMemory::instance());
  on_device({op.proj, op.out});
  const kernels::WeightView table = loaded(*op.table);
  const float* proj_norm = loaded(op.proj_norm);
  const model::Batch& b = *step_;
  const int64_t p = op.p, width = op.n_layer * p;
  std::vector<float> row(static_cast<size_t>(width));
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    kernels::dequantize_weight_row(*ref_, table, b.tokens[static_cast<size_t>(t)], row.data());
    for (int64_t l = 0; l < op.n_layer; ++l) {
      float* piece = op.proj + t * width + l * p;
      for (int64_t i = 0; i < p; ++i) piece[i] /= std::sqrt(static_cast<float>(op.n_embd));
      scalar_rms_norm(piece, proj_norm, piece, p, op.eps);
      for (int64_t i = 0; i < p; ++i) {
        const float tab = row[static_cast<size_t>(l * p + i)] * std::sqrt(static_cast<float>(p));
        op.out[l * op.ld_layer + t * p + i] = (piece[i] + tab) / std::sqrt(2.0f);
      }
    }
  }
}

}  // namespace ridge::backend::testing
