// AVX2 matmul of the table formats MXFP4 and IQ4_NL with Q8_0 activations (IQ4_XS with Q8_K: see
// iq4_xs_panel), bit-identical to the
// reference (kernels/quant/ref_rows.cpp, dot_table): per block the exact integer dot
// isum of the 32 table values with the activation bytes, then per output, block after block from 0,
//   acc = acc + (dx * dw) * float(isum)        (two roundings, no fma; dw = 2^(e - 128) or fp16 d).
//
// A panel of 8 weight rows is read side by side, one row per f32 lane of the step above. Per
// block and row: one 16-byte load of qs, a nibble split into 32 indices in element order (low
// nibbles: elements 0-15, high: 16-31, x's byte order), one vpshufb through the table shifted to
// unsigned (MXFP4: u = value + 12, 0..24); vpmaddubsw(u, x) (pairs <= 2 * 24 * 127: no
// saturation) and vpmaddwd by ones leave 8 int32 partials; a vphaddd tree folds the 8 rows'
// partials so that lane r holds row r's sum of u * x, and subtracting 12 * sum(x_b) (the
// activation quantizer's block sum) leaves isum exactly. IQ4_NL's values (-127..113) would
// saturate that pair sum shifted to unsigned: its bytes stay signed, and vpmaddubsw takes |w|
// with x's sign moved onto it (vpsignb), pairs <= 2 * 127 * 127. Up to kMaxMr x rows share each block unpacked in registers (decode);
// with more x rows a panel is unpacked once into a buffer for all of them. Every lane runs the
// same operations whatever the group, the panel's other rows, m, j0 or j1: batch invariant.
// The product is rounded on its own before the add: GCC contracts a multiply and an add into an
// fma by default in C++ (-ffp-contract=fast) where the target has FMA, as this directory's does,
// so the product passes through an empty asm (`rounded`) that it cannot fuse across (the tests
// compare with ref and with ggml bit for bit, and fail with the fma).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base/check.h"
#include "base/thread_scratch.h"
#include "kernels/gather_halves.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_rows.h"
#include "kernels/x86_avx2/panel_rows.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::quant_avx2 {
namespace {

// The 8 rows' 16-bit fields at `off` (MXFP4: e and qs[0]; IQ4_NL: d), lane r = row r's,
// assembled in general registers (gather_halves.h; a byte-wise assembly was vectorized by GCC
// into 16-bit stack stores and reloads).
inline __m128i halves(const uint8_t* const* row, int64_t off) {
  uint64_t q[2];
  gather_halves(row, off, q);
  return _mm_set_epi64x(static_cast<long long>(q[1]), static_cast<long long>(q[0]));
}

// MXFP4 (17 bytes: e, then qs): the table shifted to unsigned, lane r's scale 2^(e_r - 128)
// (mxfp4_half_scale).
struct Mxfp4 {
  static constexpr int64_t kBlockBytes = sizeof(BlockMxfp4);
  static constexpr int64_t kQsAt = 1;
  static constexpr bool kSigned = false;
  static constexpr int32_t kOffset = kMxfp4Offset;  // u = value + kOffset >= 0
  static const uint8_t* table() { return kMxfp4ValuesU.data(); }
  static __m256 scales(const uint8_t* const* row, int64_t off) {
    const __m256i e = _mm256_and_si256(_mm256_cvtepu16_epi32(halves(row, off)), _mm256_set1_epi32(0xff));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, small));
  }
};
static_assert(Mxfp4::kBlockBytes == 17);

// IQ4_NL (18 bytes: fp16 d, then qs): the signed table, lane r's scale d_r.
struct Iq4Nl {
  static constexpr int64_t kBlockBytes = sizeof(BlockIq4Nl);
  static constexpr int64_t kQsAt = 2;
  static constexpr bool kSigned = true;
  static constexpr int32_t kOffset = 0;
  static const uint8_t* table() { return reinterpret_cast<const uint8_t*>(kIq4NlValues); }
  static __m256 scales(const uint8_t* const* row, int64_t off) { return _mm256_cvtph_ps(halves(row, off)); }
};

// The 32 table bytes of the 16 qs bytes at qs, element k in byte k.
inline __m256i unpack_qs(const uint8_t* qs, __m256i table, __m256i low4) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i idx = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low4);
  return _mm256_shuffle_epi8(table, idx);
}

// One block of a panel: the 8 rows' unpacked bytes (u[r]: row r, element k in byte k) and their
// scales (lane r).
struct PanelBlock {
  __m256i u[kPanel];
  __m256 d;
};

// Block b of a panel straight from its 8 rows (past the matrix: repeats, results discarded),
// prefetching the same lines of the next panel `ahead` bytes on (0: none) about once per line:
// a panel's rows are read column-wise, which the hardware prefetcher does not follow.
template <typename F>
struct DirectBlocks {
  static constexpr int64_t kPrefetchEvery = 64 / F::kBlockBytes;  // blocks per line, rounded down
  const uint8_t* const* row;
  int64_t ahead;
  __m256i table;
  inline __attribute__((always_inline)) const PanelBlock& load(int64_t b, PanelBlock* tmp) const {
    const int64_t off = b * F::kBlockBytes;
    if (ahead != 0 && b % kPrefetchEvery == 0) {
      for (int r = 0; r < kPanel; ++r) _mm_prefetch(reinterpret_cast<const char*>(row[r] + off) + ahead, _MM_HINT_T1);
    }
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int r = 0; r < kPanel; ++r) tmp->u[r] = unpack_qs(row[r] + off + F::kQsAt, table, low4);
    tmp->d = F::scales(row, off);
    return *tmp;
  }
};

// Block b of a panel unpacked beforehand (m > kMaxMr: once for all groups of x rows).
struct PackedBlocks {
  const PanelBlock* blocks;
  inline __attribute__((always_inline)) const PanelBlock& load(int64_t b, PanelBlock*) const { return blocks[b]; }
};

// A panel's 8 output rows against x rows [i0, i0 + MR), all nb blocks from `src`; stores the
// first n_valid lanes of each x row's 8 outputs at y + i * ldy. Per lane the same operations
// whichever source and MR.
template <typename F, int MR, typename Blocks>
void panel(const Blocks& src, const Acts& a, int64_t i0, int64_t nb, float* y, int64_t ldy, int n_valid) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t* xq = a.q8_qs + i0 * a.cols;
  const float* xd = a.q8_d + i0 * nb;
  const int32_t* xs = a.q8_sum + i0 * nb;
  __m256 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    PanelBlock tmp;
    const PanelBlock& blk = src.load(b, &tmp);
    for (int i = 0; i < MR; ++i) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + i * a.cols + b * 32));
      __m256i p[kPanel];
      for (int r = 0; r < kPanel; ++r) {
        const __m256i pairs = F::kSigned ? signed_pairs(blk.u[r], x) : _mm256_maddubs_epi16(blk.u[r], x);
        p[r] = _mm256_madd_epi16(pairs, ones);
      }
      const __m256i isum = F::kOffset == 0 ? fold8_epi32(p)
                                           : _mm256_sub_epi32(fold8_epi32(p), _mm256_set1_epi32(F::kOffset * xs[i * nb + b]));
      const __m256 d = _mm256_mul_ps(blk.d, _mm256_set1_ps(xd[i * nb + b]));
      acc[i] = _mm256_add_ps(acc[i], rounded(_mm256_mul_ps(d, _mm256_cvtepi32_ps(isum))));
    }
  }
  for (int i = 0; i < MR; ++i) store_lanes(y + (i0 + i) * ldy, acc[i], n_valid);
}

// x rows [0, m) over one panel.
template <typename F, typename Blocks>
void panel_all_rows(const Blocks& src, const Acts& a, int64_t nb, float* y, int64_t ldy, int n_valid) {
  by_row_groups(a.m, [&](auto mr, int64_t i) { panel<F, decltype(mr)::value>(src, a, i, nb, y, ldy, n_valid); });
}

// m <= kMaxMr (decode): each block is unpacked in registers and used at once by every x row.
// Larger m: each panel is unpacked once into a per-thread buffer that every group of x rows then
// reads (same registers, same bits).
template <typename F>
void table_rows(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  const int64_t nb = a.cols / kQk;
  RIDGE_CHECK(w.row_bytes == static_cast<uint64_t>(nb * F::kBlockBytes));
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(F::table())));
  const bool pack = a.m > kMaxMr;
  const ThreadScratch buffer(kScratchKernelPack, pack ? static_cast<size_t>(nb) * sizeof(PanelBlock) : 0);
  auto* packed = static_cast<PanelBlock*>(buffer.data());
  for (int64_t j = j0; j < j1; j += kPanel) {
    const int n_valid = static_cast<int>(j1 - j < kPanel ? j1 - j : kPanel);
    const uint8_t* row[kPanel];
    panel_row_pointers(w, j, n_valid, row);
    const int64_t ahead = j + kPanel < j1 ? static_cast<int64_t>(kPanel * w.row_bytes) : 0;
    const DirectBlocks<F> direct{row, ahead, table};
    if (!pack) {
      panel_all_rows<F>(direct, a, nb, y + j, ldy, n_valid);
      continue;
    }
    for (int64_t b = 0; b < nb; ++b) direct.load(b, &packed[b]);
    panel_all_rows<F>(PackedBlocks{packed}, a, nb, y + j, ldy, n_valid);
  }
}

// IQ4_XS (136-byte super-blocks of 256: fp16 d, the 6-bit sub-block scales, then 8 sub-blocks
// of IQ4_NL's qs) with Q8_K activations, 8 weight rows side by side: per sub-block the isum of its
// 32 signed table bytes (IQ4_NL's vpsignb + vpmaddubsw), times ls - 32 into the super-block's
// integer total (vpmulld), then acc = fma(float(total), d_r * dx, acc): quant_ref::rows_iq4_xs's
// operations, lane by lane. The 8 rows' scale codes are unpacked in lanes once per super-block,
// their table bytes once per sub-block for up to kMaxMr x rows.
template <int MR>
void iq4_xs_panel(const uint8_t* const* row, const Acts& a, int64_t i0, int64_t nb, float* y, int64_t ldy,
                  int n_valid) {
  constexpr int64_t kBytes = sizeof(BlockIq4Xs), kQsAt = 8;
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlValues)));
  const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const __m256i mask4 = _mm256_set1_epi32(0xf), mask2 = _mm256_set1_epi32(3), k32 = _mm256_set1_epi32(32);
  __m256 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t off = b * kBytes;
    const __m256 dw = _mm256_cvtph_ps(halves(row, off));
    const __m256i sh = _mm256_cvtepu16_epi32(halves(row, off + 2));  // scales_h
    uint32_t l[kPanel];
    for (int r = 0; r < kPanel; ++r) std::memcpy(&l[r], row[r] + off + 4, 4);  // scales_l
    const __m256i sl = _mm256_setr_epi32(static_cast<int>(l[0]), static_cast<int>(l[1]), static_cast<int>(l[2]),
                                         static_cast<int>(l[3]), static_cast<int>(l[4]), static_cast<int>(l[5]),
                                         static_cast<int>(l[6]), static_cast<int>(l[7]));
    __m256 d4d8[MR];
    __m256i tot[MR];
    for (int i = 0; i < MR; ++i) {
      d4d8[i] = _mm256_mul_ps(dw, _mm256_set1_ps(a.q8k_d[(i0 + i) * nb + b]));
      tot[i] = _mm256_setzero_si256();
    }
    for (int ib = 0; ib < kQkK / kQk; ++ib) {
      const __m256i lo = _mm256_and_si256(_mm256_srl_epi32(sl, _mm_cvtsi32_si128(4 * ib)), mask4);
      const __m256i hi = _mm256_and_si256(_mm256_srl_epi32(sh, _mm_cvtsi32_si128(2 * ib)), mask2);
      const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), k32);
      __m256i w[kPanel];
      for (int r = 0; r < kPanel; ++r) w[r] = unpack_qs(row[r] + off + kQsAt + 16 * ib, table, low4);
      for (int i = 0; i < MR; ++i) {
        const __m256i x = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(a.q8_qs + (i0 + i) * a.cols + b * kQkK + ib * kQk));
        __m256i p[kPanel];
        for (int r = 0; r < kPanel; ++r) p[r] = _mm256_madd_epi16(signed_pairs(w[r], x), ones);
        tot[i] = _mm256_add_epi32(tot[i], _mm256_mullo_epi32(fold8_epi32(p), ls));
      }
    }
    for (int i = 0; i < MR; ++i) acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot[i]), d4d8[i], acc[i]);
  }
  for (int i = 0; i < MR; ++i) store_lanes(y + (i0 + i) * ldy, acc[i], n_valid);
}

}  // namespace

void rows_iq4_xs(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  const int64_t nb = a.cols / kQkK;
  RIDGE_CHECK(w.row_bytes == static_cast<uint64_t>(nb) * sizeof(BlockIq4Xs));
  for (int64_t j = j0; j < j1; j += kPanel) {
    const int n_valid = static_cast<int>(j1 - j < kPanel ? j1 - j : kPanel);
    const uint8_t* row[kPanel];
    panel_row_pointers(w, j, n_valid, row);
    by_row_groups(a.m, [&](auto mr, int64_t i) {
      iq4_xs_panel<decltype(mr)::value>(row, a, i, nb, y + j, ldy, n_valid);
    });
  }
}

void rows_mxfp4(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  table_rows<Mxfp4>(w, a, j0, j1, y, ldy);
}

void rows_iq4_nl(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y, int64_t ldy) {
  table_rows<Iq4Nl>(w, a, j0, j1, y, ldy);
}

}  // namespace ridge::kernels::quant_avx2
