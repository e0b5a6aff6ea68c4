// Kernel front: pure functions on raw pointers. The implementation for one ISA (ref, avx2,
// avx512) is chosen once, from CPUID or forced (--isa), and passed around as a `const Kernels&`.
//
// Batch invariance (docs/ARCHITECTURE.md): the value of every output element must not depend on
// the batch size m, the tiling, or the number of threads. Each y[i][j] is one dot product whose
// accumulation order is fixed by k alone; work is split along output rows j.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/thread_pool.h"
#include "tensor/ggml_type.h"

namespace ridge::kernels {

enum class Isa { kRef, kAvx2, kAvx512 };
std::string_view isa_name(Isa isa);
std::optional<Isa> isa_from_name(std::string_view name);  // "ref", "avx2", "avx512"
Isa best_isa();                                             // from CPUID

// How a matrix's bytes are ordered (kernels/weight_layout.h).
enum class WeightLayout : uint8_t {
  kRows,      // GGUF's: row after row, each row a run of the type's blocks
  kPanels16,  // Q8_0: every 16 rows one panel, block by block, each block already in the form the
              // AVX-512 kernel computes on; the last rows % 16 rows stay in kRows order
};

// A weight matrix: `rows` rows of `cols` elements; in kRows layout row-major with `cols`
// contiguous, rows `row_bytes` apart (W[j] is output feature j). Any layout takes the same bytes.
struct WeightView {
  GgmlType type = GgmlType::kF32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t row_bytes = 0;
  WeightLayout layout = WeightLayout::kRows;
};


// One output of a group matmul: y[m, w->rows] with leading dimension ldy.
struct MatmulTarget {
  const WeightView* w = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
};
constexpr size_t kMaxGroup = 4;

// Called by each thread on the output rows [j0, j1) it computed (see matmul_group).
struct MatmulEpilogue {
  void (*fn)(void* ctx, int64_t j0, int64_t j1) = nullptr;
  void* ctx = nullptr;
};

struct Kernels {
  Isa isa;
  // y[m, rows] = x[m, cols] · W^T  for every supported weight type (see supports_matmul).
  // x and y are row-major f32 with leading dimensions ldx and ldy (in elements).
  void (*matmul)(const WeightView& w, const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy,
                 ThreadPool& pool);
  // The same x against 1..kMaxGroup matrices of equal cols in one parallel region, activations
  // converted once; each output bit-identical to matmul's. An epilogue (may be null) needs all
  // matrices of the same rows; it runs per thread on the rows that thread computed, inside the
  // region, so it may only touch those rows.
  void (*matmul_group)(std::span<const MatmulTarget> targets, const float* x, int64_t ldx,
                       int64_t m, ThreadPool& pool, const MatmulEpilogue* epilogue);
  // Whether matmul accepts weights of this type.
  bool (*supports_matmul)(GgmlType type);
  // Row conversions (dst/src have n elements); any supported type to f32, kRows layout.
  void (*dequantize_row)(GgmlType type, const void* src, float* dst, int64_t n);
  // The layout this ISA's matmul reads a type fastest in (kRows unless it has a packed one);
  // matmul takes a matrix in kRows or in this layout.
  WeightLayout (*layout_for)(GgmlType type);
};

// The kernel table of an ISA (CHECKs that this CPU supports it; see isa_supported).
const Kernels& kernels_for(Isa isa);
bool isa_supported(Isa isa);

// AMX-INT8 (Intel's tile matrix unit) for the int8 prefill GEMMs of Isa::kAvx512: the integer dot
// of each (16 x rows, 16 weight rows, block) on the tiles, then the same f32 steps as the VNNI
// kernels, so the same bits (docs/kernels.md, "AMX prefill"). On by default where the CPU, the OS
// and Linux's per-process permission allow it (cpu_features().amx_int8), unless RIDGE_AMX=0.
bool amx_available();
bool amx_enabled();
void set_amx_enabled(bool on);  // for tests and benchmarks; stays off where not available
// What a run's kernels are, for reports: the ISA's name, "+amx" where its prefill takes the tiles.
std::string kernels_label(Isa isa);

}  // namespace ridge::kernels
