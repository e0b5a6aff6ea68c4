// The gated FFN (gate and up matmuls, the activation, the down matmul, gpt-oss's biases) on
// every registered backend (and the CPU backend on each ISA), with each activation (SwiGLU,
// GeGLU, gpt-oss's clamped SwiGLU), against a double-precision reference written here. The ops
// take their activations in the backend's memory and their weights given to its load_weights
// (op_fixture.h).
#include <numbers>
#include <string>
#include <vector>

#include "model/ffn.h"
#include "op_fixture.h"

namespace ridge::backend::testing {
namespace {

class BackendFfn : public BackendOpTest {};

// The gated FFN's activation of one (gate, up) pair in double (model/ffn.h's definitions; GeGLU
// without the f16 table, whose rounding the tolerance allows).
double ref_act(model::FfnActivation act, double g, double u) {
  switch (act) {
    case model::FfnActivation::kSwiglu:
      return g / (1 + std::exp(-g)) * u;
    case model::FfnActivation::kGeglu:
      if (g <= -10) return 0;
      if (g >= 10) return g * u;
      return 0.5 * g *
             (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (g + 0.044715 * g * g * g))) * u;
    case model::FfnActivation::kSwigluOai: {
      const double x = std::min(g, 7.0), y = std::clamp(u, -7.0, 7.0);
      return x / (1 + std::exp(-1.702 * x)) * (y + 1);
    }
  }
  return 0;
}

// out = down . act(gate . x + gate_bias, up . x + up_bias) + down_bias for m rows; the error of
// each output measured against sum |down * act| of its terms (rel_tol: f32 rounding; GeGLU's
// f16 table rounds the gate and the GELU to 11 bits).
void check_gated_ffn(model::Backend& be, model::FfnActivation act, bool biases, double rel_tol,
                     const char* what) {
  constexpr int64_t kIn = 64, kFf = 96, kOut = 48, kFfnLdx = kIn + 3, kLdo = kOut + 5, kRows = 5;
  const TestMatrix gate = make_matrix(GgmlType::kF32, kFf, kIn, 91, 0.5f),
                   up = make_matrix(GgmlType::kF32, kFf, kIn, 92, 0.5f),
                   down = make_matrix(GgmlType::kF32, kOut, kFf, 93, 0.3f);
  const std::vector<float> x = randn(kRows * kFfnLdx, 94), gb = randn(kFf, 95), ub = randn(kFf, 96),
                           db = randn(kOut, 97);
  model::GatedFfn w{&gate.view, &up.view, &down.view};
  w.act = act;
  if (biases) {
    w.gate_bias = gb.data();
    w.up_bias = ub.data();
    w.down_bias = db.data();
  }
  std::vector<float> gbuf(kRows * kFf), ubuf(kRows * kFf), out(kRows * kLdo, -7.0f);
  ASSERT_TRUE(load_test_weights(
      be, {weight_region("gate", gate), weight_region("up", up), weight_region("down", down),
           weight_region("gate_bias", gb), weight_region("up_bias", ub),
           weight_region("down_bias", db)}));
  DeviceMirror dev(be);
  const model::Batch batch = one_seq_batch(kRows);
  {
    StepScope step(be, batch);
    be.gated_ffn(w, dev(x), kFfnLdx, kRows, dev(gbuf), dev(ubuf), dev(out), kLdo);
  }
  dev.sync();
  double worst = 0;
  int64_t clamped = 0;
  for (int64_t t = 0; t < kRows; ++t) {
    std::vector<double> a(kFf);
    for (int64_t j = 0; j < kFf; ++j) {
      double g = biases ? gb[static_cast<size_t>(j)] : 0.0,
             u = biases ? ub[static_cast<size_t>(j)] : 0.0;
      for (int64_t c = 0; c < kIn; ++c) {
        g += gate.w[static_cast<size_t>(j * kIn + c)] * x[static_cast<size_t>(t * kFfnLdx + c)];
        u += up.w[static_cast<size_t>(j * kIn + c)] * x[static_cast<size_t>(t * kFfnLdx + c)];
      }
      clamped += (g > 7 || std::fabs(u) > 7) ? 1 : 0;
      a[static_cast<size_t>(j)] = ref_act(act, g, u);
    }
    for (int64_t o = 0; o < kLdo; ++o) {
      const float got = out[static_cast<size_t>(t * kLdo + o)];
      if (o >= kOut) {
        EXPECT_EQ(got, -7.0f) << "wrote past n_out";
        continue;
      }
      double want = biases ? db[static_cast<size_t>(o)] : 0.0, mag = 1e-3;
      for (int64_t j = 0; j < kFf; ++j) {
        want += down.w[static_cast<size_t>(o * kFf + j)] * a[static_cast<size_t>(j)];
        mag += std::fabs(down.w[static_cast<size_t>(o * kFf + j)] * a[static_cast<size_t>(j)]);
      }
      const double err = std::fabs(got - want) / mag;
      EXPECT_LT(err, rel_tol) << what << " row " << t << ", output " << o << ": " << got << " vs "
                              << want;
      worst = std::max(worst, err);
    }
  }
  note_error(std::string("gated_ffn_") + what + "_err_over_magnitude", worst);
  EXPECT_GT(max_abs(out), 1.0) << what;
  EXPECT_GT(clamped, 10) << "inputs where gpt-oss's clamps act";
}

TEST_P(BackendFfn, GatedFfnSwiglu) {
  check_gated_ffn(be(), model::FfnActivation::kSwiglu, false, 3e-6, "swiglu");
  check_gated_ffn(be(), model::FfnActivation::kSwiglu, true, 3e-6, "swiglu_biases");
}
TEST_P(BackendFfn, GatedFfnGeglu) {
  check_gated_ffn(be(), model::FfnActivation::kGeglu, false, 1e-3, "geglu");
}
TEST_P(BackendFfn, GatedFfnSwigluOai) {
  check_gated_ffn(be(), model::FfnActivation::kSwigluOai, true, 3e-6, "swiglu_oai");
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendFfn, ::testing::ValuesIn(op_params()), op_param_name);

}  // namespace
}  // namespace ridge::backend::testing
