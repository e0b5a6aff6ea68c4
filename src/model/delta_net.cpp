#include "model/delta_net.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"

namespace ridge::model {
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

void causal_conv1d_silu(const float* x, int64_t n, int64_t channels, const float* w, int64_t K,
                        float* state, float* y, IndexRange range) {
  RIDGE_CHECK(K >= 1 && K <= 64 && channels > 0 && n >= 0);
  const int64_t c_end = range.end < 0 ? channels : range.end;
  RIDGE_CHECK(range.begin >= 0 && c_end <= channels);
  const int64_t hist = K - 1;
  float win[64];  // one channel's last K - 1 inputs, oldest first
  for (int64_t c = range.begin; c < c_end; ++c) {
    const float* wc = w + c * K;
    for (int64_t i = 0; i < hist; ++i) win[i] = state[i * channels + c];
    for (int64_t t = 0; t < n; ++t) {
      const float xt = x[t * channels + c];  // read before y (which may be x) is written
      float acc = 0.0f;
      for (int64_t i = 0; i < hist; ++i) acc += win[i] * wc[i];
      acc += xt * wc[hist];
      y[t * channels + c] = acc / (1.0f + std::exp(-acc));
      for (int64_t i = 0; i + 1 < hist; ++i) win[i] = win[i + 1];
      if (hist > 0) win[hist - 1] = xt;
    }
    for (int64_t i = 0; i < hist; ++i) state[i * channels + c] = win[i];
  }
}

}  // namespace ridge::model
