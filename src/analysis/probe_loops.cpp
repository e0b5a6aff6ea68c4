// The probe's loop tables (see probe_loops.h).
#include "analysis/probe_loops.h"

#include <fmt/format.h>

#include "base/cpu_features.h"

namespace ridge::analysis {
namespace {

namespace pk = probe_kernels;

// The variants timed; the best median wins. Several streams per thread keep more cache-line
// misses in flight than one (as the kernels' row panels do); the prefetch into L2 runs ahead of
// what the hardware prefetcher would fetch. Kept small: every variant costs passes.
// Chosen on a 2-core Zen 4 VM (noisy, shared): on 2 threads several streams with a 1-2 KiB
// prefetch read fastest (5-15% above one plain stream, medians of interleaved runs; which of them
// wins varies run to run), 4 streams without prefetch never won and 16 streams were slower.
// One plain stream stays as the baseline (probe version 1's loop). The last one reads as the
// AVX-512 K-format decode does since it prefetches into L1 too (docs/decode.md, Prefetch): one
// stream, 8 KiB ahead into L2 and 2 KiB into L1, so that the roof includes the kernels' own
// pattern (1.7B Q4_K_M decode had read 109% of the version 2 probe). Here it won at one thread
// in the slow state and lost in the fast one. Since version 4 it is 4 KiB into L1, as the
// kernels went (docs/tuning.md, "Probe loops").
constexpr pk::MemLoop kReadVariants[] = {
    {1, 0, false},    {1, 1024, false}, {2, 2048, false},       {4, 1024, false},
    {4, 2048, false}, {8, 1024, false}, {1, 8192, false, 4096},
};
constexpr pk::MemLoop kCopyVariants[] = {
    {1, 0, false}, {1, 0, true}, {1, 2048, true},
};

}  // namespace

std::span<const pk::MemLoop> probe_read_variants() { return kReadVariants; }
std::span<const pk::MemLoop> probe_copy_variants() { return kCopyVariants; }

std::string probe_loop_name(const pk::MemLoop& l, bool copy) {
  std::string s = copy ? (l.nontemporal ? "streaming stores" : "plain stores")
                       : fmt::format("{} stream{}", l.n_streams, l.n_streams > 1 ? "s" : "");
  if (l.prefetch_bytes > 0) s += fmt::format(" + prefetch {} KiB", l.prefetch_bytes / 1024.0);
  if (l.prefetch_bytes > 0 && l.l1_bytes > 0) s += fmt::format(" (L1 {} KiB)", l.l1_bytes / 1024.0);
  return s;
}

Result<ProbeLoops> select_probe_loops(const std::string& forced) {
  const CpuFeatures& f = cpu_features();
  const bool avx512 = f.has_avx2_set() && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  std::string isa = forced.empty() ? (avx512 ? "avx512" : f.has_avx2_set() ? "avx2" : "generic")
                                   : forced;
  ProbeLoops l;
  l.name = isa;
  if (isa == "avx512") {
    if (!avx512) return usage_error("probe: this CPU has no AVX-512 (F/BW/VL/DQ)");
    l.read = pk::avx512::read_sum;
    l.copy = pk::avx512::copy;
    l.fma = pk::avx512::fma_loop;
    l.fma_flops = pk::kFmaFlopsAvx512;
    if (f.avx512vnni) {
      l.int8 = pk::avx512::int8_loop;
      l.int8_ops = pk::kInt8OpsAvx512;
    } else {
      l.int8 = pk::avx2::int8_loop;
      l.int8_ops = pk::kInt8OpsAvx2;
    }
    if (f.avx512bf16) {
      l.bf16 = pk::avx512::bf16_loop;
      l.bf16_flops = pk::kBf16FlopsAvx512;
    }
  } else if (isa == "avx2") {
    if (!f.has_avx2_set()) return usage_error("probe: this CPU has no AVX2/FMA/F16C");
    l.read = pk::avx2::read_sum;
    l.copy = pk::avx2::copy;
    l.fma = pk::avx2::fma_loop;
    l.fma_flops = pk::kFmaFlopsAvx2;
    l.int8 = pk::avx2::int8_loop;
    l.int8_ops = pk::kInt8OpsAvx2;
  } else if (isa == "generic") {
    l.read = pk::generic::read_sum;
    l.copy = pk::generic::copy;
  } else {
    return usage_error("probe: unknown ISA '{}' (avx512, avx2, generic)", isa);
  }
  return l;
}

}  // namespace ridge::analysis
