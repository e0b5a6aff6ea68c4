// ISA names, detection and the kernel table of each ISA.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "base/check.h"
#include "base/cpu_features.h"
#include "kernels/isa_tables.h"
#include "kernels/kernels.h"

namespace ridge::kernels {
namespace {

// One Kernels object per ISA; `Table` returns that ISA's TypeTable (built once).
template <const TypeTable& (*Table)()>
struct IsaKernels {
  static void matmul(const WeightView& w, const float* x, int64_t ldx, int64_t m, float* y,
                     int64_t ldy, ThreadPool& pool) {
    run_matmul(Table(), w, x, ldx, m, y, ldy, pool);
  }
  static void matmul_group(std::span<const MatmulTarget> targets, const float* x, int64_t ldx,
                           int64_t m, ThreadPool& pool, const MatmulEpilogue* epilogue) {
    run_matmul_group(Table(), targets, x, ldx, m, pool, epilogue);
  }
  static bool supports_matmul(GgmlType type) { return Table().find(type) != nullptr; }
  static void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
    const DequantizeRowFn fn = Table().find_dequantize(type);
    RIDGE_CHECK(fn != nullptr);
    fn(src, dst, n);
  }
  static WeightLayout layout_for(GgmlType type) {
    const TypeMatmul* e = Table().find(type);
    return e != nullptr ? e->layout : WeightLayout::kRows;
  }
  static Kernels make(Isa isa) {
    return Kernels{isa, matmul, matmul_group, supports_matmul, dequantize_row, layout_for};
  }
};

std::atomic<bool>& amx_switch() {
  static std::atomic<bool> on = [] {
    const char* env = std::getenv("RIDGE_AMX");
    return amx_available() && (env == nullptr || std::strcmp(env, "0") != 0);
  }();
  return on;
}

const TypeTable& ref_table() {
  static const TypeTable table = ref_type_table();
  return table;
}
const TypeTable& avx2_table() {
  static const TypeTable table = avx2_type_table();
  return table;
}
const TypeTable& avx512_table() {
  static const TypeTable table = avx512_type_table();
  return table;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kRef:
      return "ref";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

std::optional<Isa> isa_from_name(std::string_view name) {
  for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
    if (isa_name(isa) == name) return isa;
  }
  return std::nullopt;
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kRef:
      return true;
    case Isa::kAvx2:
      return cpu_features().has_avx2_set();
    case Isa::kAvx512:
      return cpu_features().has_avx512_set();
  }
  return false;
}

bool amx_available() { return cpu_features().amx_int8 && cpu_features().has_avx512_set(); }
bool amx_enabled() { return amx_switch().load(std::memory_order_relaxed); }
void set_amx_enabled(bool on) { amx_switch().store(on && amx_available(), std::memory_order_relaxed); }

std::string kernels_label(Isa isa) {
  std::string label(isa_name(isa));
  if (isa == Isa::kAvx512 && amx_enabled()) label += "+amx";
  return label;
}

Isa best_isa() {
  if (isa_supported(Isa::kAvx512)) return Isa::kAvx512;
  if (isa_supported(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kRef;
}

const Kernels& kernels_for(Isa isa) {
  RIDGE_CHECK(isa_supported(isa));
  static const Kernels ref = IsaKernels<ref_table>::make(Isa::kRef);
  static const Kernels avx2 = IsaKernels<avx2_table>::make(Isa::kAvx2);
  static const Kernels avx512 = IsaKernels<avx512_table>::make(Isa::kAvx512);
  switch (isa) {
    case Isa::kRef:
      return ref;
    case Isa::kAvx2:
      return avx2;
    case Isa::kAvx512:
      return avx512;
  }
  return ref;
}

}  // namespace ridge::kernels
