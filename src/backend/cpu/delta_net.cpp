#include "backend/cpu/delta_net.h"
#include "backend/cpu/model_names.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"

namespace ridge::backend::cpu {
namespace {

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Token t's rows of one value head j: its q and k (key head j % Hk), v and output.
struct HeadRows {
  const DeltaNetShape& s;
  const float *q, *k, *v;
  float* out;
  const float* q_at(int64_t t, int64_t j) const { return q + (t * s.n_k_heads + j % s.n_k_heads) * s.dk; }
  const float* k_at(int64_t t, int64_t j) const { return k + (t * s.n_k_heads + j % s.n_k_heads) * s.dk; }
  const float* v_at(int64_t t, int64_t j) const { return v + (t * s.n_v_heads + j) * s.dv; }
  float* out_at(int64_t t, int64_t j) const { return out + (t * s.n_v_heads + j) * s.dv; }
};

void check_shape(const DeltaNetShape& s) {
  RIDGE_CHECK(s.n_k_heads > 0 && s.n_v_heads % s.n_k_heads == 0 && s.dk > 0 && s.dv > 0);
}

}  // namespace

void delta_rule_sequential(const DeltaNetShape& s, int64_t n, const float* q, const float* k,
                           const float* v, const float* g, const float* beta, float* state,
                           float* out, float out_scale, IndexRange heads) {
  check_shape(s);
  const HeadRows r{s, q, k, v, out};
  const int64_t j_end = heads.end < 0 ? s.n_v_heads : heads.end;
  RIDGE_CHECK(heads.begin >= 0 && j_end <= s.n_v_heads);
  // Head by head (its state stays in cache), token by token; row a of the state in one pass:
  // decay, S k, the update, S q.
  for (int64_t j = heads.begin; j < j_end; ++j) {
    float* S = state + j * s.dv * s.dk;
    for (int64_t t = 0; t < n; ++t) {
      const float* kt = r.k_at(t, j);
      const float* qt = r.q_at(t, j);
      const float* vt = r.v_at(t, j);
      float* o = r.out_at(t, j);
      const float decay = std::exp(g[t * s.n_v_heads + j]);
      const float b = beta[t * s.n_v_heads + j];
      for (int64_t a = 0; a < s.dv; ++a) {
        float* row = S + a * s.dk;
        float sk = 0.0f;
        for (int64_t c = 0; c < s.dk; ++c) {
          row[c] *= decay;
          sk += row[c] * kt[c];
        }
        const float u = (vt[a] - sk) * b;
        float so = 0.0f;
        for (int64_t c = 0; c < s.dk; ++c) {
          row[c] += u * kt[c];
          so += row[c] * qt[c];
        }
        o[a] = so * out_scale;
      }
    }
  }
}

void delta_rule_chunked(const DeltaNetShape& s, int64_t n, const float* q, const float* k,
                        const float* v, const float* g, const float* beta, float* state, float* out,
                        float out_scale, int64_t chunk) {
  check_shape(s);
  RIDGE_CHECK(chunk > 0);
  const HeadRows r{s, q, k, v, out};
  const int64_t C = chunk, dk = s.dk, dv = s.dv;
  std::vector<float> gam(static_cast<size_t>(C));          // cumulative log-decay in the chunk
  std::vector<float> u(static_cast<size_t>(C * dv));       // u_i
  std::vector<float> s0q(static_cast<size_t>(C * dv));     // S_0 q_i
  std::vector<float> kk(static_cast<size_t>(C * C));       // k_i . k_j (j < i), q_i . k_j (j <= i)
  std::vector<float> qk(static_cast<size_t>(C * C));
  for (int64_t j = 0; j < s.n_v_heads; ++j) {
    float* S = state + j * dv * dk;
    for (int64_t t0 = 0; t0 < n; t0 += C) {
      const int64_t m = std::min(C, n - t0);
      float acc = 0.0f;
      for (int64_t i = 0; i < m; ++i) gam[i] = acc += g[(t0 + i) * s.n_v_heads + j];
      for (int64_t i = 0; i < m; ++i) {
        const float* ki = r.k_at(t0 + i, j);
        const float* qi = r.q_at(t0 + i, j);
        for (int64_t l = 0; l <= i; ++l) {
          const float* kl = r.k_at(t0 + l, j);
          kk[i * C + l] = dot(ki, kl, dk);
          qk[i * C + l] = dot(qi, kl, dk);
        }
        // u_i's right-hand side, beta_i (v_i - e^G_i S_0 k_i), and S_0 q_i.
        const float b = beta[(t0 + i) * s.n_v_heads + j];
        const float e = std::exp(gam[i]);
        const float* vi = r.v_at(t0 + i, j);
        for (int64_t a = 0; a < dv; ++a) {
          const float* row = S + a * dk;
          u[i * dv + a] = b * (vi[a] - e * dot(row, ki, dk));
          s0q[i * dv + a] = e * dot(row, qi, dk);
        }
        // Forward substitution: u_i -= beta_i sum_{l < i} (k_i . k_l) e^(G_i - G_l) u_l.
        for (int64_t l = 0; l < i; ++l) {
          const float c = b * kk[i * C + l] * std::exp(gam[i] - gam[l]);
          for (int64_t a = 0; a < dv; ++a) u[i * dv + a] -= c * u[l * dv + a];
        }
        // o_i = e^G_i S_0 q_i + sum_{l <= i} (q_i . k_l) e^(G_i - G_l) u_l.
        float* o = r.out_at(t0 + i, j);
        for (int64_t a = 0; a < dv; ++a) o[a] = s0q[i * dv + a];
        for (int64_t l = 0; l <= i; ++l) {
          const float c = qk[i * C + l] * std::exp(gam[i] - gam[l]);
          for (int64_t a = 0; a < dv; ++a) o[a] += c * u[l * dv + a];
        }
        for (int64_t a = 0; a < dv; ++a) o[a] *= out_scale;
      }
      // S <- e^G_m S + sum_l e^(G_m - G_l) u_l k_l^T.
      const float e_end = std::exp(gam[m - 1]);
      for (int64_t a = 0; a < dv; ++a) {
        float* row = S + a * dk;
        for (int64_t c = 0; c < dk; ++c) row[c] *= e_end;
      }
      for (int64_t l = 0; l < m; ++l) {
        const float w = std::exp(gam[m - 1] - gam[l]);
        const float* kl = r.k_at(t0 + l, j);
        for (int64_t a = 0; a < dv; ++a) {
          const float ua = w * u[l * dv + a];
          float* row = S + a * dk;
          for (int64_t c = 0; c < dk; ++c) row[c] += ua * kl[c];
        }
      }
    }
  }
}

void causal_conv1d(const float* x, int64_t n, int64_t channels, const float* w, int64_t K,
                   float* state, float* y, IndexRange range) {
  constexpr int64_t kMaxK = 8, kMaxWidth = 256;  // taps; channels per pass (stack buffers)
  RIDGE_CHECK(K >= 1 && K <= kMaxK && channels > 0 && n >= 0);
  const int64_t c_end = range.end < 0 ? channels : range.end;
  RIDGE_CHECK(range.begin >= 0 && c_end <= channels);
  const int64_t hist = K - 1;
  for (int64_t c0 = range.begin; c0 < c_end; c0 += kMaxWidth) {
    const int64_t width = std::min(kMaxWidth, c_end - c0);
    // The taps transposed ([K][width]) and the last K - 1 inputs as rows, oldest first: each row
    // of the output is then a few contiguous multiply-adds per channel.
    float wt[kMaxK][kMaxWidth], ring[kMaxK][kMaxWidth];
    float* rows[kMaxK];
    for (int64_t i = 0; i < K; ++i) {
      for (int64_t c = 0; c < width; ++c) wt[i][c] = w[(c0 + c) * K + i];
    }
    for (int64_t i = 0; i < hist; ++i) {
      std::copy(state + i * channels + c0, state + i * channels + c0 + width, ring[i]);
      rows[i] = ring[i];
    }
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * channels + c0;
      float* yt = y + t * channels + c0;
      float* oldest = hist > 0 ? rows[0] : nullptr;
      for (int64_t c = 0; c < width; ++c) {
        const float xc = xt[c];  // read before yt (which may be xt) is written
        float acc = 0.0f;
        for (int64_t i = 0; i < hist; ++i) acc += rows[i][c] * wt[i][c];
        acc += xc * wt[hist][c];
        if (hist > 0) oldest[c] = xc;  // rows[0][c] was read above: it becomes the newest
        yt[c] = acc;
      }
      if (hist > 0) {
        std::rotate(rows, rows + 1, rows + hist);
      }
    }
    for (int64_t i = 0; i < hist; ++i) std::copy(rows[i], rows[i] + width, state + i * channels + c0);
  }
}

}  // namespace ridge::backend::cpu
