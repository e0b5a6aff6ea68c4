// oneDNN's matmul on the BM_Gemm shapes (kernels_bench: m = 512 activation rows against Qwen3-0.6B
// ffn matrices), for the evaluation in docs/dependencies.md: is oneDNN faster than our dense
// prefill GEMM? Built only where Debian's libdnnl-dev is installed (it is not a dependency).
//   OMP_NUM_THREADS=1 build/bench/onednn_gemm_eval     (median of 15 calls per case)
// Weights are given as GGUF stores them (row j = output j) and reordered once, untimed, into
// oneDNN's preferred layout. It also checks batch invariance: does row 0 of an m = 512 product
// equal, bit for bit, the same row computed alone (m = 1, as in decode)? And for BF16, does it
// equal ridge's own AVX-512 kernel (llama.cpp's order) on the same bf16 values?
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "tensor/fp16.h"

namespace {

using dnnl::memory;

struct Case {
  double gflops = 0;
  std::vector<float> row0;  // y[0][0 .. rows)
  int64_t differ_from_ridge = -1;  // BF16: outputs of row 0 that differ from ridge's kernel
};

// Row 0 of x (bf16, [m, cols]) against the weights (bf16, GGUF rows) through ridge's AVX-512
// kernel: how many of the `rows` outputs differ from `want` in any bit.
int64_t differ_from_ridge(const memory& xm, const memory& wg, int64_t rows, int64_t cols,
                          const std::vector<float>& want) {
  const auto* xb = static_cast<const uint16_t*>(xm.get_data_handle());
  std::vector<float> x0(static_cast<size_t>(cols));
  for (int64_t k = 0; k < cols; ++k) x0[static_cast<size_t>(k)] = ridge::bf16_to_f32(xb[k]);
  const ridge::kernels::WeightView w{ridge::GgmlType::kBF16, wg.get_data_handle(), rows, cols,
                                     static_cast<uint64_t>(cols) * 2};
  std::vector<float> y(static_cast<size_t>(rows));
  ridge::ThreadPool pool(1);
  ridge::kernels::kernels_for(ridge::kernels::Isa::kAvx512).matmul(w, x0.data(), cols, 1, y.data(), rows, pool);
  int64_t differ = 0;
  for (size_t j = 0; j < y.size(); ++j) differ += std::memcmp(&y[j], &want[j], 4) != 0;
  return differ;
}

// A memory laid out as `want`, holding uniform(-1, 1) values written in the f32 layout `f32_view`.
memory random_memory(const dnnl::engine& eng, dnnl::stream& s, const memory::desc& f32_view,
                     const memory::desc& want, uint32_t seed) {
  memory src(f32_view, eng), out(want, eng);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  auto* p = static_cast<float*>(src.get_data_handle());
  for (size_t i = 0; i < f32_view.get_size() / sizeof(float); ++i) p[i] = val(rng);
  dnnl::reorder(src, out).execute(s, src, out);
  s.wait();
  return out;
}

Case run(memory::data_type type, int64_t m, int64_t rows, int64_t cols) {
  const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const memory::desc x({m, cols}, type, memory::format_tag::ab);
  const memory::desc w_any({cols, rows}, type, memory::format_tag::any);
  const memory::desc w_gguf({cols, rows}, type, memory::format_tag::ba);
  const memory::desc y({m, rows}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(x, w_any, y), eng);
  // x row 0 is the same for every m (the same seed fills the rows in order).
  const memory xm = random_memory(eng, s, memory::desc({m, cols}, memory::data_type::f32, memory::format_tag::ab), x, 1);
  memory wg = random_memory(eng, s, memory::desc({cols, rows}, memory::data_type::f32, memory::format_tag::ba), w_gguf, 2);
  memory wm(pd.weights_desc(), eng), ym(y, eng);
  dnnl::reorder(wg, wm).execute(s, wg, wm);
  const dnnl::matmul mm(pd);
  std::vector<double> t;
  for (int r = 0; r < 15; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    mm.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ym}});
    s.wait();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  Case c;
  c.gflops = 2.0 * static_cast<double>(m * rows * cols) / t[t.size() / 2] / 1e9;
  const auto* y0 = static_cast<const float*>(ym.get_data_handle());
  c.row0.assign(y0, y0 + rows);
  if (type == memory::data_type::bf16 && ridge::kernels::isa_supported(ridge::kernels::Isa::kAvx512)) {
    c.differ_from_ridge = differ_from_ridge(xm, wg, rows, cols, c.row0);
  }
  std::printf("  (%s, m %lld)\n", pd.impl_info_str(), static_cast<long long>(m));
  return c;
}

}  // namespace

int main() {
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{3072, 1024}, {1024, 3072}}) {
    for (const auto& [type, name] : {std::pair{memory::data_type::bf16, "bf16"},
                                     std::pair{memory::data_type::f32, "f32"}}) {
      const Case big = run(type, 512, rows, cols);
      for (int64_t m : {1, 17}) {
        const Case small = run(type, m, rows, cols);
        int64_t differ = 0;
        for (int64_t j = 0; j < rows; ++j) {
          differ += std::memcmp(&big.row0[static_cast<size_t>(j)], &small.row0[static_cast<size_t>(j)], 4) != 0;
        }
        // (m = 1 here reads a cache-resident matrix 15 times: its rate says nothing of decode.)
        std::printf("%s rows %lld cols %lld: m = %lld %.1f GFLOP/s; row 0 differs from m = 512's in "
                    "%lld of %lld outputs\n",
                    name, static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(m),
                    small.gflops, static_cast<long long>(differ), static_cast<long long>(rows));
      }
      std::printf("%s rows %lld cols %lld: m = 512 %.1f GFLOP/s", name, static_cast<long long>(rows),
                  static_cast<long long>(cols), big.gflops);
      if (big.differ_from_ridge >= 0) {
        std::printf("; row 0 differs from ridge's kernel in %lld of %lld outputs",
                    static_cast<long long>(big.differ_from_ridge), static_cast<long long>(rows));
      }
      std::printf("\n");
    }
  }
  return 0;
}
