// AVX2 matmul for Q8_0 weights and Q8_0 activations.
//
// Output rows are taken 8 at a time (a panel, one per 32-bit lane). Each weight block of the
// panel is transposed so that register g holds bytes 4g..4g+3 of every row, stored as |w| with
// the signs kept separately by applying them to the broadcast activation bytes
// (vpsignb(x, w)): vpmaddubsw(|w|, sign(x, w)) never saturates (|w| <= 128, |x| <= 127, so a
// pair is at most 32512) and is exact for every int8 w, -128 included; vpmaddwd with ones widens
// the pairs to 32-bit lane sums. The f32 accumulation is ref's specification exactly
// (acc = fma(float(isum_b), dw_b * dx_b, acc), block after block), so results are bit-identical
// to ref and to AVX-512.
#include <immintrin.h>

#include <cstring>

#include "base/thread_scratch.h"
#include "kernels/x86_avx2/avx2.h"
#include "kernels/x86_avx2/direct_panel.h"
#include "kernels/x86_avx2/quant_simd.h"

namespace ridge::kernels::avx2 {
namespace {

constexpr int64_t kBlockBytes = avx2_panel::kBlockBytes;
constexpr int kPanel = avx2_panel::kRows;  // the direct path's panel height too
constexpr int kMr = 4;

struct alignas(32) PackedBlock {
  __m256i abs_w[8];   // |w| of bytes 4g..4g+3 of each row
  __m256i sign_w[8];  // w itself (only its signs are used, by vpsignb)
  __m256 d;           // fp16 scale of each row, as f32
};

// `ahead`: bytes from a row to the same row of the next panel. The panel's rows are read
// column-wise, which the hardware prefetcher does not follow, so the same lines of the next panel
// are prefetched into L2 while this one is packed (one line per row every 2 blocks).
void pack_block(const uint8_t* const row[kPanel], int64_t b, int64_t ahead, PackedBlock* out) {
  const int64_t off = b * kBlockBytes;
  for (int r = 0; r < kPanel && (b & 1) == 0; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(row[r] + off) + ahead, _MM_HINT_T1);
  }
  __m256i z[8];
  for (int r = 0; r < 8; ++r) {
    z[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[r] + off + 2));
  }
  __m256i lanes[8];
  quant_avx2::transpose_8x8_epi32(z, lanes);
  for (int g = 0; g < 8; ++g) {
    out->sign_w[g] = lanes[g];
    out->abs_w[g] = _mm256_abs_epi8(lanes[g]);
  }
  alignas(16) uint16_t d16[kPanel];
  for (int r = 0; r < kPanel; ++r) std::memcpy(&d16[r], row[r] + off, 2);
  out->d = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d16)));
}

template <int MR>
void panel_rows(const PackedBlock* blocks, const Acts& a, int64_t i0, int64_t nb, float* y,
                int64_t ldy, int n_valid) {
  __m256 acc[MR];
  for (int i = 0; i < MR; ++i) acc[i] = _mm256_setzero_ps();
  const int8_t* xq = a.q8_qs + i0 * a.cols;
  const float* xd = a.q8_d + i0 * nb;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    const PackedBlock& blk = blocks[b];
    __m256i isum[MR];
    for (int i = 0; i < MR; ++i) isum[i] = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g) {
      const __m256i aw = _mm256_load_si256(&blk.abs_w[g]);
      const __m256i sw = _mm256_load_si256(&blk.sign_w[g]);
      for (int i = 0; i < MR; ++i) {
        int32_t x4;
        std::memcpy(&x4, xq + i * a.cols + b * 32 + 4 * g, 4);
        const __m256i sx = _mm256_sign_epi8(_mm256_set1_epi32(x4), sw);
        const __m256i pairs = _mm256_maddubs_epi16(aw, sx);
        isum[i] = _mm256_add_epi32(isum[i], _mm256_madd_epi16(pairs, ones));
      }
    }
    for (int i = 0; i < MR; ++i) {
      const __m256 scale = _mm256_mul_ps(blk.d, _mm256_set1_ps(xd[i * nb + b]));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), scale, acc[i]);
    }
  }
  for (int i = 0; i < MR; ++i) avx2_panel::store_lanes(y + (i0 + i) * ldy, acc[i], n_valid);
}


}  // namespace

void rows_q8_0(const WeightView& w, const Acts& a, int64_t j0, int64_t j1, float* y,
               int64_t ldy) {
  const int64_t nb = a.cols / 32;
  const auto* base = static_cast<const uint8_t*>(w.data);
  // Decode reads the blocks straight from the rows (direct_panel.h): the same bits, no buffer.
  const bool direct = a.m <= avx2_panel::kDirectMaxM;
  const ThreadScratch scratch(kScratchKernelPack, direct ? 0 : static_cast<size_t>(nb) * sizeof(PackedBlock));
  auto* const packed = static_cast<PackedBlock*>(scratch.data());
  for (int64_t j = j0; j < j1; j += kPanel) {
    const int64_t n_valid = j1 - j < kPanel ? j1 - j : kPanel;
    const uint8_t* row[kPanel];
    for (int r = 0; r < kPanel; ++r) {
      const int64_t jr = j + (r < n_valid ? r : n_valid - 1);  // past the end: repeat, discard
      row[r] = base + static_cast<uint64_t>(jr) * w.row_bytes;
    }
    const auto ahead = static_cast<int64_t>(kPanel * w.row_bytes);
    const int nv = static_cast<int>(n_valid);
    if (direct) {
      switch (a.m) {
        case 1: avx2_panel::direct_panel<1>(row, ahead, a, nb, y + j, ldy, nv); break;
        case 2: avx2_panel::direct_panel<2>(row, ahead, a, nb, y + j, ldy, nv); break;
        case 3: avx2_panel::direct_panel<3>(row, ahead, a, nb, y + j, ldy, nv); break;
        default: break;  // m = 0
      }
      continue;
    }
    for (int64_t b = 0; b < nb; ++b) pack_block(row, b, ahead, &packed[b]);
    int64_t i = 0;
    for (; i + kMr <= a.m; i += kMr) panel_rows<kMr>(packed, a, i, nb, y + j, ldy, nv);
    switch (a.m - i) {
      case 1: panel_rows<1>(packed, a, i, nb, y + j, ldy, nv); break;
      case 2: panel_rows<2>(packed, a, i, nb, y + j, ldy, nv); break;
      case 3: panel_rows<3>(packed, a, i, nb, y + j, ldy, nv); break;
      default: break;
    }
  }
}

}  // namespace ridge::kernels::avx2
