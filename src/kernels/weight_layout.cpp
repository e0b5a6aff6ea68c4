#include "kernels/weight_layout.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "base/check.h"
#include "base/thread_pool.h"

namespace ridge::kernels {
namespace {

// One field of a block: bytes [in, in + len) of row r's block go to out + r * len of the
// panel's block, XORed with `flip` (weight_layout.h).
struct Move {
  int in;
  int out;
  int len;  // 1, 2 or 4
  uint32_t flip;
};

struct Panels16Format {
  int block_bytes = 0;
  int block_elems = 0;
  std::vector<Move> moves;
};

const Panels16Format* panels16_format(GgmlType type) {
  static const Panels16Format q8_0 = [] {
    Panels16Format f{34, 32, {}};
    for (int g = 0; g < 8; ++g) f.moves.push_back({2 + 4 * g, 64 * g, 4, 0x80808080u});
    f.moves.push_back({0, 512, 2, 0});
    return f;
  }();
  // Q4_K and Q5_K: qs dwords, (Q5_K) qh dwords, scale dwords, d | dmin.
  const auto k45 = [](bool five) {
    const int qs_at = five ? 48 : 16, scales_out = five ? 2560 : 2048;
    Panels16Format f{five ? 176 : 144, 256, {}};
    for (int c = 0; c < 4; ++c) {
      for (int t = 0; t < 8; ++t) f.moves.push_back({qs_at + 32 * c + 4 * t, 64 * (8 * c + t), 4, 0});
    }
    if (five) {
      for (int t = 0; t < 8; ++t) f.moves.push_back({16 + 4 * t, 2048 + 64 * t, 4, 0});
    }
    for (int q = 0; q < 3; ++q) f.moves.push_back({4 + 4 * q, scales_out + 64 * q, 4, 0});
    f.moves.push_back({0, scales_out + 192, 4, 0});
    return f;
  };
  static const Panels16Format q4_k = k45(false);
  static const Panels16Format q5_k = k45(true);
  static const Panels16Format q6_k = [] {
    Panels16Format f{210, 256, {}};
    for (int g = 0; g < 32; ++g) f.moves.push_back({4 * g, 64 * g, 4, 0});                // ql
    for (int g = 0; g < 16; ++g) f.moves.push_back({128 + 4 * g, 2048 + 64 * g, 4, 0});   // qh
    for (int q = 0; q < 4; ++q) f.moves.push_back({192 + 4 * q, 3072 + 64 * q, 4, 0});   // scales
    f.moves.push_back({208, 3328, 2, 0});                                                // d
    return f;
  }();
  // Q2_K: qs dwords, scale dwords, d | dmin.
  static const Panels16Format q2_k = [] {
    Panels16Format f{84, 256, {}};
    for (int g = 0; g < 16; ++g) f.moves.push_back({16 + 4 * g, 64 * g, 4, 0});     // qs
    for (int q = 0; q < 4; ++q) f.moves.push_back({4 * q, 1024 + 64 * q, 4, 0});    // scales
    f.moves.push_back({80, 1280, 4, 0});                                            // d | dmin
    return f;
  }();
  // Q3_K: qs dwords, hmask dwords, scale dwords, d.
  static const Panels16Format q3_k = [] {
    Panels16Format f{110, 256, {}};
    for (int g = 0; g < 16; ++g) f.moves.push_back({32 + 4 * g, 64 * g, 4, 0});       // qs
    for (int t = 0; t < 8; ++t) f.moves.push_back({4 * t, 1024 + 64 * t, 4, 0});      // hmask
    for (int q = 0; q < 3; ++q) f.moves.push_back({96 + 4 * q, 1536 + 64 * q, 4, 0});  // scales
    f.moves.push_back({108, 1728, 2, 0});                                              // d
    return f;
  }();
  // IQ4_XS: qs dwords, scales_l, d | scales_h.
  static const Panels16Format iq4_xs = [] {
    Panels16Format f{136, 256, {}};
    for (int g = 0; g < 32; ++g) f.moves.push_back({8 + 4 * g, 64 * g, 4, 0});  // qs
    f.moves.push_back({4, 2048, 4, 0});                                         // scales_l
    f.moves.push_back({0, 2112, 4, 0});                                         // d | scales_h
    return f;
  }();
  // The legacy 4/5-bit formats: qs dwords (4), qh (5-bit), d | m (with a min) or d.
  const auto legacy = [](int bytes, int qs_at, int qh_at, bool has_min) {
    Panels16Format f{bytes, 32, {}};
    for (int k = 0; k < 4; ++k) f.moves.push_back({qs_at + 4 * k, 64 * k, 4, 0});
    if (qh_at >= 0) f.moves.push_back({qh_at, 256, 4, 0});
    f.moves.push_back({0, qh_at >= 0 ? 320 : 256, has_min ? 4 : 2, 0});
    return f;
  };
  static const Panels16Format q4_0 = legacy(18, 2, -1, false);
  static const Panels16Format q4_1 = legacy(20, 4, -1, true);
  static const Panels16Format q5_0 = legacy(22, 6, 2, false);
  static const Panels16Format q5_1 = legacy(24, 8, 4, true);
  // MXFP4: qs dwords (4), then the exponent byte.
  static const Panels16Format mxfp4 = [] {
    Panels16Format f{17, 32, {}};
    for (int k = 0; k < 4; ++k) f.moves.push_back({1 + 4 * k, 64 * k, 4, 0});
    f.moves.push_back({0, 256, 1, 0});
    return f;
  }();
  switch (type) {
    case GgmlType::kQ8_0: return &q8_0;
    case GgmlType::kQ2_K: return &q2_k;
    case GgmlType::kQ3_K: return &q3_k;
    case GgmlType::kQ4_K: return &q4_k;
    case GgmlType::kQ5_K: return &q5_k;
    case GgmlType::kQ6_K: return &q6_k;
    case GgmlType::kIQ4_XS: return &iq4_xs;
    case GgmlType::kQ4_0: case GgmlType::kIQ4_NL: return &q4_0;  // the same block layout
    case GgmlType::kQ4_1: return &q4_1;
    case GgmlType::kQ5_0: return &q5_0;
    case GgmlType::kQ5_1: return &q5_1;
    case GgmlType::kMXFP4: return &mxfp4;
    default: return nullptr;
  }
}

// Copies a field of `len` (1, 2 or 4) bytes XORed with `flip`; constant-size copies, so that the
// compiler emits plain moves instead of a memmove call per field.
inline void move_field(uint8_t* dst, const uint8_t* src, int len, uint32_t flip) {
  if (len == 1) {
    *dst = static_cast<uint8_t>(*src ^ flip);
  } else if (len == 4) {
    uint32_t v;
    std::memcpy(&v, src, 4);
    v ^= flip;
    std::memcpy(dst, &v, 4);
  } else {
    uint16_t v;
    std::memcpy(&v, src, 2);
    v = static_cast<uint16_t>(v ^ flip);
    std::memcpy(dst, &v, 2);
  }
}

// Row r's block at `row_block` <-> its place in the panel's block at `panel_block`.
void move_block(const Panels16Format& f, uint8_t* panel_block, const uint8_t* row_block, int64_t r) {
  for (const Move& m : f.moves) move_field(panel_block + m.out + r * m.len, row_block + m.in, m.len, m.flip);
}
void unmove_block(const Panels16Format& f, const uint8_t* panel_block, uint8_t* row_block, int64_t r) {
  for (const Move& m : f.moves) move_field(row_block + m.in, panel_block + m.out + r * m.len, m.len, m.flip);
}

}  // namespace

bool layout_defined(GgmlType type, WeightLayout layout) {
  return layout == WeightLayout::kRows ||
         (layout == WeightLayout::kPanels16 && panels16_format(type) != nullptr);
}

void convert_layout(GgmlType type, WeightLayout layout, uint8_t* data, int64_t rows, int64_t cols) {
  RIDGE_CHECK(layout_defined(type, layout) && rows >= 0);
  if (layout == WeightLayout::kRows) return;
  const Panels16Format& f = *panels16_format(type);
  RIDGE_CHECK(cols % f.block_elems == 0);
  const int64_t nb = cols / f.block_elems;
  const auto row_bytes = static_cast<size_t>(nb * f.block_bytes);
  const int64_t n_panels = rows / kPanelRows;
  // Panels [p0, p1), each through a copy of its rows.
  const auto convert_panels = [&](int64_t p0, int64_t p1) {
    std::vector<uint8_t> rows_copy(kPanelRows * row_bytes);
    for (int64_t p = p0; p < p1; ++p) {
      uint8_t* panel = data + static_cast<size_t>(p) * kPanelRows * row_bytes;
      std::memcpy(rows_copy.data(), panel, rows_copy.size());
      for (int64_t b = 0; b < nb; ++b) {
        for (int64_t r = 0; r < kPanelRows; ++r) {
          move_block(f, panel + b * kPanelRows * f.block_bytes,
                     rows_copy.data() + r * row_bytes + b * f.block_bytes, r);
        }
      }
    }
  };
  // Large matrices on several threads (a model's load converts GBs; panels are independent).
  constexpr size_t kBytesPerThread = size_t{16} << 20;
  const size_t total = static_cast<size_t>(n_panels) * kPanelRows * row_bytes;
  const auto n_threads = static_cast<int64_t>(std::min<size_t>(
      {total / kBytesPerThread + 1, std::max(1u, std::thread::hardware_concurrency()), 8}));
  run_on_threads(static_cast<int>(n_threads), [&](int t) {
    convert_panels(n_panels * t / n_threads, n_panels * (t + 1) / n_threads);
  });
}

void dequantize_weight_row(const Kernels& k, const WeightView& w, int64_t row, float* dst) {
  RIDGE_CHECK(row >= 0 && row < w.rows);
  const auto* data = static_cast<const uint8_t*>(w.data);
  if (w.layout == WeightLayout::kRows || row >= w.rows / kPanelRows * kPanelRows) {
    k.dequantize_row(w.type, data + static_cast<uint64_t>(row) * w.row_bytes, dst, w.cols);
    return;
  }
  const Panels16Format& f = *panels16_format(w.type);
  const uint8_t* panel = data + static_cast<uint64_t>(row / kPanelRows) * kPanelRows * w.row_bytes;
  thread_local std::vector<uint8_t> bytes;  // the row in kRows order (embeddings: per token)
  bytes.resize(w.row_bytes);
  for (int64_t b = 0; b < w.cols / f.block_elems; ++b) {
    unmove_block(f, panel + b * kPanelRows * f.block_bytes, bytes.data() + b * f.block_bytes, row % kPanelRows);
  }
  k.dequantize_row(w.type, bytes.data(), dst, w.cols);
}

}  // namespace ridge::kernels
