#include "model/ffn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/fp16.h"

namespace ridge::model {
namespace {

const std::vector<float>& gelu_table_vector() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      const float x = fp16_to_f32(static_cast<uint16_t>(h));
      constexpr float kA = 0.044715f, kSqrt2OverPi = 0.79788456080286535587989211986876f;
      const float y = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kA * x * x)));
      t[h] = fp16_to_f32(f32_to_fp16(y));
    }
    return t;
  }();
  return table;
}

}  // namespace

const float* gelu_f16_table() { return gelu_table_vector().data(); }

float geglu(float gate, float up) { return geglu_with(gelu_f16_table(), gate, up); }

float swiglu_oai(float gate, float up) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  const float x = std::min(gate, kLimit);
  const float y = std::clamp(up, -kLimit, kLimit);
  return x / (1.0f + std::exp(kAlpha * -x)) * (y + 1.0f);
}

}  // namespace ridge::model
