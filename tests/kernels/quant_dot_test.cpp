// Dot products of the quantized weight formats (kernels/quant/quant_rows.h).
//
// 1. The reference rows routine against an independent float computation: dequantize the
//    weights (dequantize_row_quant) and the quantized activations, multiply-add in double.
//    Tolerance 1e-5 of sum |w x| (f32 accumulation of per-block terms). Q4_1 / Q5_1 take their
//    min term as ggml does, m * s with s = fp16(amax / 127 * sum q) from the unrounded scale
//    (ggml's Q8_1 activations), not m * d * sum q: checked against that formula here.
// 2. Every ISA's matmul (through kernels_for(isa).matmul, the driver and its activation
//    quantization) against the reference rows, for m = 1 and m = 3, ragged row counts and
//    thread counts 1 and 2. Tolerance 2e-5 of sum |w x|: the integers are identical, the float
//    terms are summed in a different order (vector lanes).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/matmul_driver.h"
#include "kernels/quant/act_q8_k.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/quant/quants.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

const GgmlType kDotTypes[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                              GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K,
                              GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};

struct Problem {
  GgmlType type;
  int64_t rows, cols, m;
  std::vector<float> wf;  // [rows, cols] source floats
  std::vector<uint8_t> wq;
  uint64_t row_bytes;
  std::vector<float> x;  // [m, cols]
  WeightView view() const { return {type, wq.data(), rows, cols, row_bytes}; }
};

Problem make_problem(GgmlType type, int64_t rows, int64_t n_blocks, int64_t m, uint32_t seed) {
  const auto& tr = traits(type);
  Problem p{type, rows, n_blocks * 256, m, {}, {}, 0, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  p.wf.resize(static_cast<size_t>(rows * p.cols));
  for (auto& v : p.wf) v = nd(rng) * 0.05f;
  p.x.resize(static_cast<size_t>(m * p.cols));
  for (auto& v : p.x) v = nd(rng);
  p.row_bytes = static_cast<uint64_t>(p.cols / tr.block_elems) * tr.block_bytes;
  p.wq.resize(p.row_bytes * static_cast<uint64_t>(rows));
  for (int64_t j = 0; j < rows; ++j) {
    quantize_row(type, p.wf.data() + j * p.cols, p.wq.data() + j * p.row_bytes, p.cols);
  }
  return p;
}

bool uses_q8_k(GgmlType t) { return traits(t).block_elems == 256; }
bool has_min(GgmlType t) { return t == GgmlType::kQ4_1 || t == GgmlType::kQ5_1; }

// The min of block b of a Q4_1 / Q5_1 row (both layouts: fp16 d, fp16 m, ...).
float block_min(const uint8_t* row, GgmlType t, int64_t b) {
  const uint8_t* blk = row + b * traits(t).block_bytes;
  return fp16_to_f32(static_cast<uint16_t>(blk[2] | (blk[3] << 8)));
}

// Quantized activations as the driver builds them, and their dequantized values.
struct QuantActs {
  std::vector<int8_t> qs;
  std::vector<float> d;
  std::vector<int32_t> sum;
  std::vector<float> s;  // Q4_1 / Q5_1: ggml's Q8_1 term per block
  std::vector<uint8_t> k_buffer;
  Acts acts;
  std::vector<float> values;  // [m, cols]
};

QuantActs quantize_acts(const Problem& p) {
  QuantActs q;
  q.acts.m = p.m;
  q.acts.cols = p.cols;
  q.values.resize(p.x.size());
  if (uses_q8_k(p.type)) {
    q.k_buffer.resize(acts_q8_k_bytes(p.m, p.cols) + 64);
    quantize_acts_q8_k(p.x.data(), p.cols, p.m, p.cols, q.k_buffer.data(), &q.acts);
    for (int64_t k = 0; k < p.m * p.cols; ++k) q.values[k] = q.acts.q8k_d[k / 256] * q.acts.q8_qs[k];
  } else {
    const int64_t nb = p.cols / 32;
    q.qs.resize(p.x.size());
    q.d.resize(static_cast<size_t>(p.m * nb));
    q.sum.resize(q.d.size());
    for (int64_t i = 0; i < p.m; ++i) {
      quantize_act_row_q8_0(p.x.data() + i * p.cols, p.cols, q.qs.data() + i * p.cols,
                            q.d.data() + i * nb, q.sum.data() + i * nb);
    }
    q.acts.q8_qs = q.qs.data();
    q.acts.q8_d = q.d.data();
    q.acts.q8_sum = q.sum.data();
    for (int64_t k = 0; k < p.m * p.cols; ++k) q.values[k] = q.d[k / 32] * q.qs[k];
    if (has_min(p.type)) {
      for (size_t b = 0; b < q.d.size(); ++b) {
        float amax = 0.0f;
        for (size_t k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(p.x[32 * b + k]));
        q.s.push_back(fp16_to_f32(f32_to_fp16(amax / 127.0f * static_cast<float>(q.sum[b]))));
      }
      q.acts.q8_s = q.s.data();
    }
  }
  return q;
}

MatmulRowsFn ref_rows(GgmlType t) {
  TypeTable table;
  add_quant_rows_ref(table);
  return table.find(t)->rows;
}

TEST(QuantDot, ReferenceMatchesDequantizedFloatDot) {
  for (GgmlType t : kDotTypes) {
    SCOPED_TRACE(std::string(ggml_type_name(t)));
    const Problem p = make_problem(t, 7, 3, 2, 1);
    const QuantActs qa = quantize_acts(p);
    std::vector<float> y(static_cast<size_t>(p.m * p.rows));
    ref_rows(t)(p.view(), qa.acts, 0, p.rows, y.data(), p.rows);
    std::vector<float> wrow(static_cast<size_t>(p.cols));
    for (int64_t j = 0; j < p.rows; ++j) {
      dequantize_row_quant(t, p.wq.data() + j * p.row_bytes, wrow.data(), p.cols);
      for (int64_t i = 0; i < p.m; ++i) {
        double dot = 0.0, mag = 0.0;
        for (int64_t k = 0; k < p.cols; ++k) {
          dot += double(wrow[k]) * qa.values[i * p.cols + k];
          mag += std::fabs(double(wrow[k]) * qa.values[i * p.cols + k]);
        }
        if (has_min(t)) {  // the min times s instead of times the block's dequantized sum
          const int64_t nb = p.cols / 32;
          for (int64_t b = 0; b < nb; ++b) {
            const auto ib = static_cast<size_t>(i * nb + b);
            dot += double(block_min(p.wq.data() + j * p.row_bytes, t, b)) *
                   (double(qa.s[ib]) - double(qa.d[ib]) * qa.sum[ib]);
          }
        }
        ASSERT_NEAR(y[i * p.rows + j], dot, 1e-5 * mag + 1e-30) << "row " << j << " act " << i;
      }
    }
  }
}

// The float dot of the unquantized data: the quantized dot must stay close (quantization error).
TEST(QuantDot, CloseToUnquantizedDot) {
  for (GgmlType t : kDotTypes) {
    SCOPED_TRACE(std::string(ggml_type_name(t)));
    const Problem p = make_problem(t, 16, 4, 1, 2);
    const QuantActs qa = quantize_acts(p);
    std::vector<float> y(static_cast<size_t>(p.rows));
    ref_rows(t)(p.view(), qa.acts, 0, p.rows, y.data(), p.rows);
    double err = 0.0, ref = 0.0;
    for (int64_t j = 0; j < p.rows; ++j) {
      double dot = 0.0;
      for (int64_t k = 0; k < p.cols; ++k) dot += double(p.wf[j * p.cols + k]) * p.x[k];
      err += (y[j] - dot) * (y[j] - dot);
      ref += dot * dot;
    }
    EXPECT_LT(std::sqrt(err / ref), t == GgmlType::kQ2_K ? 0.5 : 0.2);
  }
}

TEST(QuantDot, EveryIsaMatchesReference) {
  for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    const Kernels& k = kernels_for(isa);
    for (GgmlType t : kDotTypes) {
      ASSERT_TRUE(k.supports_matmul(t));
      for (int64_t m : {1, 3}) {
        for (int n_threads : {1, 2}) {
          SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(ggml_type_name(t)) +
                       " m=" + std::to_string(m) + " threads=" + std::to_string(n_threads));
          ThreadPool pool(n_threads);
          const Problem p = make_problem(t, 13, 5, m, 3 + static_cast<uint32_t>(m));
          const QuantActs qa = quantize_acts(p);
          std::vector<float> expect(static_cast<size_t>(m * p.rows));
          ref_rows(t)(p.view(), qa.acts, 0, p.rows, expect.data(), p.rows);
          std::vector<float> got(expect.size(), NAN);
          k.matmul(p.view(), p.x.data(), p.cols, m, got.data(), p.rows, pool);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < p.rows; ++j) {
              double mag = 0.0;  // sum |w x| with the dequantized operands' scale
              for (int64_t c = 0; c < p.cols; ++c) {
                mag += std::fabs(double(p.wf[j * p.cols + c]) * qa.values[i * p.cols + c]);
              }
              ASSERT_NEAR(got[i * p.rows + j], expect[i * p.rows + j], 2e-5 * mag)
                  << "out " << i << "," << j;
            }
          }
        }
      }
    }
  }
}

// Block counts that are not multiples of the kernels' 2-, 4- and 8-block steps exercise their
// tails (9, 17: whole 8-block groups and a tail; 8, 16: no tail).
TEST(QuantDot, OddLegacyBlockCounts) {
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1}) {
      for (int64_t nb : {1, 2, 3, 5, 8, 9, 16, 17}) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(ggml_type_name(t)) +
                     " blocks=" + std::to_string(nb));
        ThreadPool pool(1);
        std::mt19937 rng(static_cast<uint32_t>(nb));
        std::normal_distribution<float> nd;
        const auto& tr = traits(t);
        const int64_t cols = 32 * nb, rows = 5;
        const auto row_bytes = static_cast<uint64_t>(nb) * tr.block_bytes;
        std::vector<float> wf(rows * cols), x(cols);
        for (auto& v : wf) v = nd(rng);
        for (auto& v : x) v = nd(rng);
        std::vector<uint8_t> wq(rows * row_bytes);
        for (int64_t j = 0; j < rows; ++j) quantize_row(t, wf.data() + j * cols, wq.data() + j * row_bytes, cols);
        const WeightView w{t, wq.data(), rows, cols, row_bytes};
        std::vector<float> a(rows), b(rows);
        kernels_for(Isa::kRef).matmul(w, x.data(), cols, 1, a.data(), rows, pool);
        kernels_for(isa).matmul(w, x.data(), cols, 1, b.data(), rows, pool);
        for (int64_t j = 0; j < rows; ++j) EXPECT_NEAR(a[j], b[j], 1e-4 * (1 + std::fabs(a[j])));
      }
    }
  }
}

}  // namespace
}  // namespace ridge::kernels
