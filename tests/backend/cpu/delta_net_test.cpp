// The Gated DeltaNet core (backend/cpu/delta_net.h) against a reference written independently in
// double and in Hugging Face's notation (the state transposed, [dk][dv]: S *= e^g; kv = S^T k;
// delta = (v - kv) beta; S += k delta^T; o = S^T q), and the chunked form against the token-by-
// token one, state included, across chunk boundaries and calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/delta_net.h"
#include "backend/cpu/isa_table.h"

namespace ridge::backend::cpu {
namespace delta_net_test {

using model::Batch;

struct Inputs {
  DeltaNetShape s;
  int64_t n = 0;
  std::vector<float> q, k, v, g, beta, state;
};

std::vector<float> unit_rows(int64_t rows, int64_t d, std::mt19937& rng, float scale) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += std::pow(x[r * d + i] = nd(rng), 2);
    for (int64_t i = 0; i < d; ++i) x[r * d + i] *= scale / static_cast<float>(std::sqrt(ss));
  }
  return x;
}

Inputs make_inputs(DeltaNetShape s, int64_t n, uint32_t seed, float min_g) {
  std::mt19937 rng(seed);
  Inputs in{s, n, {}, {}, {}, {}, {}, {}};
  in.q = unit_rows(n * s.n_k_heads, s.dk, rng, 1.0f / std::sqrt(static_cast<float>(s.dk)));
  in.k = unit_rows(n * s.n_k_heads, s.dk, rng, 1.0f);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ug(min_g, 0.0f), ub(0.05f, 0.95f);
  for (int64_t i = 0; i < n * s.n_v_heads * s.dv; ++i) in.v.push_back(nd(rng));
  for (int64_t i = 0; i < n * s.n_v_heads; ++i) {
    in.g.push_back(ug(rng));
    in.beta.push_back(ub(rng));
  }
  for (int64_t i = 0; i < s.state_floats(); ++i) in.state.push_back(0.3f * nd(rng));
  return in;
}

// The reference: per value head j, key head j % Hk, state H[b][a] = S[a][b] in double.
void reference(const Inputs& in, std::vector<double>& state, std::vector<double>& out) {
  const DeltaNetShape& s = in.s;
  out.assign(static_cast<size_t>(in.n * s.n_v_heads * s.dv), 0.0);
  for (int64_t j = 0; j < s.n_v_heads; ++j) {
    std::vector<double> H(static_cast<size_t>(s.dk * s.dv));  // [dk][dv]
    for (int64_t a = 0; a < s.dv; ++a)
      for (int64_t b = 0; b < s.dk; ++b) H[b * s.dv + a] = state[(j * s.dv + a) * s.dk + b];
    const int64_t kh = j % s.n_k_heads;
    for (int64_t t = 0; t < in.n; ++t) {
      const float* q = &in.q[(t * s.n_k_heads + kh) * s.dk];
      const float* k = &in.k[(t * s.n_k_heads + kh) * s.dk];
      const float* v = &in.v[(t * s.n_v_heads + j) * s.dv];
      const double decay = std::exp(static_cast<double>(in.g[t * s.n_v_heads + j]));
      for (double& h : H) h *= decay;
      std::vector<double> delta(static_cast<size_t>(s.dv));
      for (int64_t a = 0; a < s.dv; ++a) {
        double kv = 0;
        for (int64_t b = 0; b < s.dk; ++b) kv += H[b * s.dv + a] * k[b];
        delta[a] = (v[a] - kv) * in.beta[t * s.n_v_heads + j];
      }
      for (int64_t b = 0; b < s.dk; ++b)
        for (int64_t a = 0; a < s.dv; ++a) H[b * s.dv + a] += k[b] * delta[a];
      for (int64_t a = 0; a < s.dv; ++a) {
        double o = 0;
        for (int64_t b = 0; b < s.dk; ++b) o += H[b * s.dv + a] * q[b];
        out[(t * s.n_v_heads + j) * s.dv + a] = o;
      }
    }
    for (int64_t a = 0; a < s.dv; ++a)
      for (int64_t b = 0; b < s.dk; ++b) state[(j * s.dv + a) * s.dk + b] = H[b * s.dv + a];
  }
}

// max |got - want| over max |want| (both vectors).
template <typename A, typename B>
double rel_err(const A& got, const B& want) {
  double err = 0, mag = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
    mag = std::max(mag, std::fabs(static_cast<double>(want[i])));
  }
  return err / mag;
}

const DeltaNetShape kShapes[] = {{1, 1, 8, 8}, {2, 4, 16, 16}, {2, 2, 32, 16}, {1, 3, 8, 12}};

TEST(DeltaNet, SequentialMatchesReference) {
  uint32_t seed = 1;
  for (const DeltaNetShape& s : kShapes) {
    for (int64_t n : {1, 7, 70}) {
      const Inputs in = make_inputs(s, n, ++seed, -2.0f);
      std::vector<float> state = in.state, out(static_cast<size_t>(n * s.n_v_heads * s.dv));
      delta_rule_sequential(s, n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                            state.data(), out.data());
      std::vector<double> ref_state(in.state.begin(), in.state.end()), ref_out;
      reference(in, ref_state, ref_out);
      EXPECT_LT(rel_err(out, ref_out), 2e-5) << "Hk " << s.n_k_heads << " Hv " << s.n_v_heads << " n " << n;
      EXPECT_LT(rel_err(state, ref_state), 2e-5);
    }
  }
}

TEST(DeltaNet, ChunkedMatchesSequential) {
  uint32_t seed = 100;
  for (const DeltaNetShape& s : kShapes) {
    for (int64_t n : {1, 5, 16, 17, 64, 65, 150}) {
      for (int64_t chunk : {int64_t{1}, int64_t{16}, int64_t{64}}) {
        for (float min_g : {-0.05f, -3.0f}) {  // slow and fast decay
          const Inputs in = make_inputs(s, n, ++seed, min_g);
          std::vector<float> s1 = in.state, s2 = in.state;
          std::vector<float> o1(static_cast<size_t>(n * s.n_v_heads * s.dv)), o2(o1.size());
          delta_rule_sequential(s, n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                                s1.data(), o1.data());
          delta_rule_chunked(s, n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                             s2.data(), o2.data(), 1.0f, chunk);
          SCOPED_TRACE(::testing::Message() << "Hv " << s.n_v_heads << " n " << n << " chunk " << chunk << " g >= " << min_g);
          EXPECT_LT(rel_err(o2, o1), 1e-4);
          EXPECT_LT(rel_err(s2, s1), 1e-4);
        }
      }
    }
  }
}

// A sequence split over calls (prefill in pieces, then decode) carries its state: the same outputs
// as one call.
TEST(DeltaNet, StateCarriesAcrossCalls) {
  const DeltaNetShape s{2, 4, 16, 16};
  const int64_t n = 90;
  const Inputs in = make_inputs(s, n, 7, -1.0f);
  std::vector<float> whole_state = in.state, whole(static_cast<size_t>(n * s.n_v_heads * s.dv));
  delta_rule_sequential(s, n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                        whole_state.data(), whole.data());
  std::vector<float> state = in.state, parts(whole.size());
  int64_t t = 0;
  for (int64_t len : {40, 33, 1, 1, 15}) {
    const int64_t qo = t * s.n_k_heads * s.dk, vo = t * s.n_v_heads * s.dv, go = t * s.n_v_heads;
    delta_rule_chunked(s, len, in.q.data() + qo, in.k.data() + qo, in.v.data() + vo, in.g.data() + go,
                       in.beta.data() + go, state.data(), parts.data() + vo, 1.0f, 16);
    t += len;
  }
  ASSERT_EQ(t, n);
  EXPECT_LT(rel_err(parts, whole), 1e-4);
  EXPECT_LT(rel_err(state, whole_state), 1e-4);
}

// Heads computed in ranges (as threads split them) give the same bits as all at once; the output
// scale multiplies each output.
TEST(DeltaNet, HeadRangesAndOutputScale) {
  const DeltaNetShape s{2, 6, 16, 16};
  const int64_t n = 9;
  const Inputs in = make_inputs(s, n, 11, -1.0f);
  std::vector<float> s1 = in.state, o1(static_cast<size_t>(n * s.n_v_heads * s.dv));
  delta_rule_sequential(s, n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                        s1.data(), o1.data());
  std::vector<float> s2 = in.state, o2(o1.size());
  for (IndexRange r : {IndexRange{0, 1}, IndexRange{1, 4}, IndexRange{4, -1}}) {
    delta_rule_sequential(s, n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                          s2.data(), o2.data(), 0.25f, r);
  }
  EXPECT_EQ(s2, s1);
  for (size_t i = 0; i < o1.size(); ++i) ASSERT_EQ(o2[i], o1[i] * 0.25f) << i;
}

// The vector kernels: the reference's outputs and state to f32 rounding (dot products summed in
// lanes), for head sizes with and without a lane tail, over many tokens (the state carries any
// difference along).
TEST(DeltaNet, VectorKernelsMatchTheReference) {
  uint32_t seed = 300;
  for (kernels::Isa isa : {kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
    if (!kernels::isa_supported(isa)) continue;
    const DeltaRuleFn fn = isa_table(isa).delta_rule;
    for (const DeltaNetShape& s : {DeltaNetShape{2, 4, 16, 16}, DeltaNetShape{1, 3, 20, 12},
                                   DeltaNetShape{2, 2, 128, 128}}) {
      const int64_t n = 70;
      const Inputs in = make_inputs(s, n, ++seed, -1.0f);
      std::vector<float> s1 = in.state, o1(static_cast<size_t>(n * s.n_v_heads * s.dv));
      std::vector<float> s2 = in.state, o2(o1.size());
      delta_rule_sequential(s, n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                            s1.data(), o1.data(), 0.5f);
      fn(s, n, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), s2.data(),
         o2.data(), 0.5f, IndexRange{});
      SCOPED_TRACE(::testing::Message() << kernels::isa_name(isa) << " dk " << s.dk);
      EXPECT_LT(rel_err(o2, o1), 1e-5);
      EXPECT_LT(rel_err(s2, s1), 1e-5);
    }
  }
}

TEST(CausalConv1d, MatchesTheWindowFormulaAndCarriesItsState) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t C = 6, K = 4, n = 11;
  std::vector<float> x(static_cast<size_t>(n * C)), w(static_cast<size_t>(C * K));
  for (auto& e : x) e = nd(rng);
  for (auto& e : w) e = nd(rng);
  // Direct: a new sequence (zero history), y[t][c] = sum_i x[t - (K-1) + i][c] w[c][i].
  std::vector<double> want(static_cast<size_t>(n * C));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t c = 0; c < C; ++c) {
      double a = 0;
      for (int64_t i = 0; i < K; ++i) {
        const int64_t src = t - (K - 1) + i;
        if (src >= 0) a += static_cast<double>(x[src * C + c]) * w[c * K + i];
      }
      want[t * C + c] = a;
    }
  }
  std::vector<float> state(static_cast<size_t>((K - 1) * C), 0.0f), y(x.size());
  causal_conv1d(x.data(), n, C, w.data(), K, state.data(), y.data());
  EXPECT_LT(rel_err(y, want), 1e-6);
  for (int64_t r = 0; r < K - 1; ++r) {  // the state: the last K - 1 inputs
    for (int64_t c = 0; c < C; ++c) EXPECT_EQ(state[r * C + c], x[(n - (K - 1) + r) * C + c]);
  }
  // In pieces (3, 1, 1, 6 rows): the same outputs.
  std::fill(state.begin(), state.end(), 0.0f);
  std::vector<float> parts(x.size());
  int64_t t = 0;
  for (int64_t len : {3, 1, 1, 6}) {
    causal_conv1d(x.data() + t * C, len, C, w.data(), K, state.data(), parts.data() + t * C);
    t += len;
  }
  EXPECT_EQ(parts, y);
  // In place, in channel ranges: the same outputs and state.
  std::vector<float> state2(state.size(), 0.0f), inplace = x;
  for (IndexRange r : {IndexRange{0, 2}, IndexRange{2, 5}, IndexRange{5, -1}}) {
    causal_conv1d(inplace.data(), n, C, w.data(), K, state2.data(), inplace.data(), r);
  }
  EXPECT_EQ(inplace, y);
  EXPECT_EQ(state2, state);
}

}  // namespace delta_net_test
}  // namespace ridge::backend::cpu
