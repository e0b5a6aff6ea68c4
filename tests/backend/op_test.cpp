// The row ops of model/backend.h on every registered backend (and the CPU backend on each ISA),
// each on random inputs against a plain double-precision reference written here: embed,
// rms_norm, matmul and matmul_group (f32 and q8_0 weights), residual, softcap and
// keep_output_rows. The gated FFN: ffn_op_test.cpp; attention: attention_op_test.cpp. The ops take
// their activations in the backend's memory and their weights given to its load_weights
// (op_fixture.h).
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "model/config.h"
#include "model/ops.h"
#include "op_fixture.h"
#include "tensor/ggml_type.h"

namespace ridge::backend::testing {
namespace {

class BackendOp : public BackendOpTest {};

// y[i, j] = w[j] . x[i] in double, with a bound on an acceptable error: 4e-6 of sum |w x| (f32
// rounding of the dot's terms) plus, for q8_0 weights, what quantizing x to q8_0 (as the CPU
// kernels do: each block's step amax / 127, rounding error at most half of it) can move the dot.
struct MatmulRef {
  std::vector<double> y, tol;  // [m, rows]
};
MatmulRef ref_matmul(const TestMatrix& w, const float* x, int64_t ldx, int64_t m) {
  const int64_t rows = w.view.rows, cols = w.view.cols;
  MatmulRef r{std::vector<double>(static_cast<size_t>(m * rows)),
              std::vector<double>(static_cast<size_t>(m * rows))};
  for (int64_t i = 0; i < m; ++i) {
    std::vector<double> step(static_cast<size_t>(cols), 0.0);
    for (int64_t b = 0; w.view.type == GgmlType::kQ8_0 && b < cols / 32; ++b) {
      double amax = 0;
      for (int64_t c = 32 * b; c < 32 * b + 32; ++c)
        amax = std::max(amax, std::fabs(double{x[i * ldx + c]}));
      for (int64_t c = 32 * b; c < 32 * b + 32; ++c) step[static_cast<size_t>(c)] = amax / 127.0;
    }
    for (int64_t j = 0; j < rows; ++j) {
      double dot = 0, mag = 0, quant = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double wv = w.w[static_cast<size_t>(j * cols + c)];
        dot += wv * x[i * ldx + c];
        mag += std::fabs(wv * x[i * ldx + c]);
        quant += std::fabs(wv) * step[static_cast<size_t>(c)] * 0.51;
      }
      r.y[static_cast<size_t>(i * rows + j)] = dot;
      r.tol[static_cast<size_t>(i * rows + j)] = 4e-6 * mag + quant;
    }
  }
  return r;
}

// Checks y [m, rows] (ldy) against the reference; returns the worst error over its tolerance.
double check_matmul_out(const std::vector<float>& y, int64_t ldy, const MatmulRef& r, int64_t m,
                        int64_t rows) {
  double worst = 0, biggest = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldy; ++j) {
      const float got = y[static_cast<size_t>(i * ldy + j)];
      if (j >= rows) {
        EXPECT_EQ(got, -7.0f) << "wrote past the matrix's rows: " << i << ", " << j;
        continue;
      }
      const auto k = static_cast<size_t>(i * rows + j);
      const double err = std::fabs(got - r.y[k]);
      EXPECT_LE(err, r.tol[k]) << "row " << i << ", column " << j << ": " << got << " vs "
                               << r.y[k];
      worst = std::max(worst, err / r.tol[k]);
      biggest = std::max(biggest, std::fabs(double{got}));
    }
  }
  EXPECT_GT(biggest, 1.0) << "outputs all (near) zero";
  return worst;
}

constexpr int64_t kM = 5, kCols = 160, kLdx = kCols + 3;

void check_matmul(model::Backend& be, GgmlType type) {
  const TestMatrix w = make_matrix(type, 37, kCols, 11, 0.5f);
  const std::vector<float> x = randn(static_cast<size_t>(kM * kLdx), 12);
  const int64_t ldy = 37 + 2;
  std::vector<float> y(static_cast<size_t>(kM * ldy), -7.0f);
  // Batch invariance (backend.h): row 3 alone gives the bits it had among 5.
  std::vector<float> one(static_cast<size_t>(ldy), -7.0f);
  ASSERT_TRUE(load_test_weights(be, {weight_region("w", w)}));
  DeviceMirror dev(be);
  const model::Batch batch = one_seq_batch(kM);
  {
    StepScope step(be, batch);
    be.matmul(w.view, dev(x), kLdx, kM, dev(y), ldy);
  }
  const model::Batch single = one_seq_batch(1);
  {
    StepScope step(be, single);
    be.matmul(w.view, dev(x) + 3 * kLdx, kLdx, 1, dev(one), ldy);
  }
  dev.sync();
  const MatmulRef r = ref_matmul(w, x.data(), kLdx, kM);
  note_error(std::string("matmul_") + std::string(ggml_type_name(type)) + "_err_over_tol",
             check_matmul_out(y, ldy, r, kM, 37));
  EXPECT_EQ(0, std::memcmp(one.data(), y.data() + 3 * ldy, 37 * sizeof(float))) << "row 3 alone";
}

void check_matmul_group(model::Backend& be, GgmlType type) {
  const TestMatrix a = make_matrix(type, 37, kCols, 21, 0.5f),
                   b = make_matrix(type, 16, kCols, 22, 0.3f),
                   c = make_matrix(type, 64, kCols, 23, 0.5f);
  const std::vector<float> x = randn(static_cast<size_t>(kM * kLdx), 24);
  std::vector<float> ya(static_cast<size_t>(kM * 40), -7.0f),
      yb(static_cast<size_t>(kM * 16), -7.0f), yc(static_cast<size_t>(kM * 70), -7.0f);
  std::vector<float> alone(static_cast<size_t>(kM * 70), -7.0f);
  ASSERT_TRUE(load_test_weights(
      be, {weight_region("a", a), weight_region("b", b), weight_region("c", c)}));
  DeviceMirror dev(be);
  const kernels::MatmulTarget targets[] = {
      {&a.view, dev(ya), 40}, {&b.view, dev(yb), 16}, {&c.view, dev(yc), 70}};
  const model::Batch batch = one_seq_batch(kM);
  {
    StepScope step(be, batch);
    be.matmul_group(std::span(targets), dev(x), kLdx, kM);
    be.matmul(c.view, dev(x), kLdx, kM, dev(alone), 70);
  }
  dev.sync();
  double worst = check_matmul_out(ya, 40, ref_matmul(a, x.data(), kLdx, kM), kM, 37);
  worst = std::max(worst, check_matmul_out(yb, 16, ref_matmul(b, x.data(), kLdx, kM), kM, 16));
  worst = std::max(worst, check_matmul_out(yc, 70, ref_matmul(c, x.data(), kLdx, kM), kM, 64));
  note_error(std::string("matmul_group_") + std::string(ggml_type_name(type)) + "_err_over_tol",
             worst);
  EXPECT_EQ(alone, yc) << "a matrix of the group gives the bits of its own matmul";
}

TEST_P(BackendOp, MatmulF32) { check_matmul(be(), GgmlType::kF32); }
TEST_P(BackendOp, MatmulQ8_0) { check_matmul(be(), GgmlType::kQ8_0); }
TEST_P(BackendOp, MatmulGroupF32) { check_matmul_group(be(), GgmlType::kF32); }
TEST_P(BackendOp, MatmulGroupQ8_0) { check_matmul_group(be(), GgmlType::kQ8_0); }

TEST_P(BackendOp, RmsNorm) {
  constexpr int64_t kRows = 6, kD = 67;  // an odd width: tails of vector loops
  std::vector<float> x = randn(kRows * kD, 31, 2.0f, 0.5f);
  const std::vector<float> w = randn(kD, 32, 0.3f, 1.0f);
  for (int64_t i = 0; i < kD; ++i)
    x[static_cast<size_t>(i)] *= 1e-3f;  // row 0: mean(x^2) below eps
  std::vector<float> y(x.size(), -7.0f), inplace = x;
  ASSERT_TRUE(load_test_weights(be(), {weight_region("w", w)}));
  DeviceMirror dev(be());
  const model::Batch batch = one_seq_batch(kRows);
  {
    StepScope step(be(), batch);
    be().rms_norm(dev(x), w.data(), dev(y), kRows, kD, 1e-5f);
    be().rms_norm(dev(inplace), w.data(), dev(inplace), kRows, kD, 1e-5f);
  }
  dev.sync();
  std::vector<double> ref(x.size()), xd(x.begin(), x.end());
  for (int64_t t = 0; t < kRows; ++t)
    ref_rms_norm(xd.data() + t * kD, w.data(), ref.data() + t * kD, kD, 1e-5);
  const double err = max_abs_diff(y.data(), ref.data(), ref.size());
  note_error("rms_norm_abs_err", err);
  EXPECT_LT(err, 2e-6 * max_abs(y)) << "vs double reference";
  EXPECT_GT(max_abs(y), 0.5);
  EXPECT_EQ(inplace, y) << "y = x in place";
}

TEST_P(BackendOp, Embed) {
  constexpr int64_t kVocab = 11, kD = 40, kN = 20;
  const TestMatrix table = make_matrix(GgmlType::kF32, kVocab, kD, 41, 1.0f);
  model::ModelConfig cfg;
  cfg.rope_dims = 16;
  cfg.rope_theta = 10000.0f;
  cfg.rope_freq_scale = 0.5f;
  cfg.n_swa = 4;
  cfg.rope_theta_swa = 1000.0f;  // the sliding-window layers' own table
  cfg.rope_freq_scale_swa = 1.0f;
  const std::vector<float> factors = {1, 1, 1, 1.5f, 2, 2, 3, 4};
  const model::YarnParams yarn;
  std::vector<float> x(kN * kD), cs(kN * 8), sn(kN * 8), cs_swa(kN * 8), sn_swa(kN * 8);
  ASSERT_TRUE(load_test_weights(
      be(), {weight_region("token_embd", table), weight_region("rope_factors", factors, true)}));
  DeviceMirror dev(be());
  model::EmbedOp op{&table.view, 1.5f,           dev(x),         kD,
                    &cfg,        factors.data(), factors.data(), &yarn,
                    dev(cs),     dev(sn),        dev(cs_swa),    dev(sn_swa)};
  const model::Batch batch = one_seq_batch(kN);
  {
    StepScope step(be(), batch);
    be().embed(op);
  }
  dev.sync();
  double x_err = 0, rope_err = 0;
  for (int64_t t = 0; t < kN; ++t) {
    for (int64_t i = 0; i < kD; ++i) {
      const double want =
          1.5 * table.w[static_cast<size_t>(batch.tokens[static_cast<size_t>(t)] * kD + i)];
      x_err = std::max(x_err, std::fabs(x[static_cast<size_t>(t * kD + i)] - want));
    }
    for (int64_t i = 0; i < 8; ++i) {
      const auto k = static_cast<size_t>(t * 8 + i);
      const double a = t * 0.5 * std::pow(10000.0, -2.0 * i / 16) / factors[static_cast<size_t>(i)];
      const double b = t * 1.0 * std::pow(1000.0, -2.0 * i / 16) / factors[static_cast<size_t>(i)];
      for (double e : {cs[k] - std::cos(a), sn[k] - std::sin(a), cs_swa[k] - std::cos(b),
                       sn_swa[k] - std::sin(b)}) {
        rope_err = std::max(rope_err, std::fabs(e));
      }
    }
  }
  note_error("embed_rope_abs_err", rope_err);
  EXPECT_LE(x_err, 1e-6 * max_abs(x)) << "rows times scale";
  EXPECT_LT(rope_err, 5e-5) << "cos/sin of the positions' angles";
  EXPECT_GT(max_abs(x), 1.0);
}

// proj += bias; proj = RMSNorm(proj) * post_norm; x += proj; xn = RMSNorm(x) * next_norm: each
// optional part off and on.
TEST_P(BackendOp, Residual) {
  constexpr int64_t kRows = 4, kD = 72;
  const std::vector<float> bias = randn(kD, 51), post = randn(kD, 52, 0.2f, 1.0f),
                           next = randn(kD, 53, 0.2f, 1.0f);
  const model::Batch batch = one_seq_batch(kRows);
  ASSERT_TRUE(load_test_weights(be(), {weight_region("bias", bias), weight_region("post", post),
                                       weight_region("next", next)}));
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    const bool with_bias = variant >= 1, with_post = variant >= 2, with_next = variant != 2;
    std::vector<float> proj = randn(kRows * kD, 54 + variant, 3.0f),
                       x = randn(kRows * kD, 60 + variant);
    std::vector<float> xn(x.size(), -7.0f);
    std::vector<double> p_ref(proj.begin(), proj.end()), x_ref(x.begin(), x.end()),
        xn_ref(x.size());
    for (int64_t t = 0; t < kRows; ++t) {
      double* p = p_ref.data() + t * kD;
      for (int64_t i = 0; i < kD && with_bias; ++i) p[i] += bias[static_cast<size_t>(i)];
      if (with_post) ref_rms_norm(p, post.data(), p, kD, 1e-6);
      for (int64_t i = 0; i < kD; ++i) x_ref[static_cast<size_t>(t * kD + i)] += p[i];
      if (with_next)
        ref_rms_norm(x_ref.data() + t * kD, next.data(), xn_ref.data() + t * kD, kD, 1e-6);
    }
    DeviceMirror dev(be());
    model::ResidualOp op{kRows,
                         kD,
                         1e-6f,
                         dev(proj),
                         with_bias ? bias.data() : nullptr,
                         with_post ? post.data() : nullptr,
                         dev(x),
                         with_next ? next.data() : nullptr,
                         with_next ? dev(xn) : nullptr};
    {
      StepScope step(be(), batch);
      be().residual(op);
    }
    dev.sync();
    const double x_err = max_abs_diff(x.data(), x_ref.data(), x.size());
    note_error("residual_x_abs_err", x_err);
    EXPECT_LT(x_err, 4e-6 * max_abs(x));
    EXPECT_GT(max_abs(x), 1.0);
    if (with_next) {
      EXPECT_LT(max_abs_diff(xn.data(), xn_ref.data(), xn.size()), 4e-6 * max_abs(xn)) << "xn";
      EXPECT_GT(max_abs(xn), 0.5);
    } else {
      EXPECT_EQ(xn, std::vector<float>(x.size(), -7.0f)) << "xn written without next_norm";
    }
  }
}

TEST_P(BackendOp, Softcap) {
  constexpr int64_t kRows = 3, kN = 50;
  const std::vector<float> z0 = randn(kRows * kN, 71, 25.0f);
  std::vector<float> z = z0;
  DeviceMirror dev(be());
  const model::Batch batch = one_seq_batch(kRows);
  {
    StepScope step(be(), batch);
    be().softcap(dev(z), kRows, kN, 15.0f);
  }
  dev.sync();
  std::vector<double> ref(z.size());
  for (size_t i = 0; i < z.size(); ++i) ref[i] = 15.0 * std::tanh(z0[i] / 15.0);
  const double err = max_abs_diff(z.data(), ref.data(), z.size());
  note_error("softcap_abs_err", err);
  EXPECT_LT(err, 2e-6 * 15.0);
  EXPECT_GT(max_abs(z0), 30.0) << "inputs beyond the cap";
  EXPECT_GT(max_abs(z), 10.0);
}

// Rows 1, 4 and 5 of 7 need logits: x and attn keep them at rows 0..2, bit for bit.
TEST_P(BackendOp, KeepOutputRows) {
  constexpr int64_t kDx = 24, kDattn = 40;
  for (const std::vector<uint8_t>& need :
       {std::vector<uint8_t>{0, 1, 0, 0, 1, 1, 0}, std::vector<uint8_t>{1, 1, 0, 0, 0, 0, 1}}) {
    const std::vector<float> x0 = randn(7 * kDx, 81), a0 = randn(7 * kDattn, 82);
    std::vector<float> x = x0, attn = a0;
    const model::Batch batch = one_seq_batch(7, need);
    DeviceMirror dev(be());
    {
      StepScope step(be(), batch);
      const model::RowBuffer rows[] = {{dev(x), kDx}, {dev(attn), kDattn}};
      be().keep_output_rows(rows);
    }
    dev.sync();
    int64_t m = 0;
    for (int64_t t = 0; t < 7; ++t) {
      if (need[static_cast<size_t>(t)] == 0) continue;
      EXPECT_EQ(0, std::memcmp(x.data() + m * kDx, x0.data() + t * kDx, kDx * sizeof(float)))
          << "x row " << t;
      EXPECT_EQ(
          0, std::memcmp(attn.data() + m * kDattn, a0.data() + t * kDattn, kDattn * sizeof(float)))
          << "attn row " << t;
      ++m;
    }
    EXPECT_EQ(m, 3);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendOp, ::testing::ValuesIn(op_params()), op_param_name);

}  // namespace
}  // namespace ridge::backend::testing
