// Exact decoding of hand-built blocks. Each test writes the bytes of a block field by field (as
// ggml-common.h lays them out) and computes the expected value of every element from the format's
// definition, indexing element -> (sub-block, byte, bit) directly rather than walking the block as
// the decoder does. Bit-exactness against llama.cpp's own decoders (dequantize_row_* of
// libggml-base) was also checked on random blocks of every format when this was written.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/quant/quants.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

// Little-endian byte buffer of one block.
struct Bytes {
  std::vector<uint8_t> b;
  explicit Bytes(size_t n) : b(n, 0) {}
  void f16(size_t off, float v) {
    const uint16_t h = f32_to_fp16(v);
    b[off] = static_cast<uint8_t>(h & 0xff);
    b[off + 1] = static_cast<uint8_t>(h >> 8);
  }
};

std::vector<float> decode(GgmlType t, const Bytes& blk) {
  std::vector<float> y(traits(t).block_elems);
  dequantize_row_quant(t, blk.b.data(), y.data(), static_cast<int64_t>(y.size()));
  return y;
}

uint8_t pat(int i) { return static_cast<uint8_t>((i * 53 + 17) & 0xff); }  // arbitrary bytes

TEST(QuantDecode, Q4_0AndQ4_1) {
  Bytes a(18);  // d | qs[16]
  a.f16(0, 0.5f);
  for (int j = 0; j < 16; ++j) a.b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = decode(GgmlType::kQ4_0, a);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * (j - 8));
    EXPECT_EQ(y[j + 16], 0.5f * (7 - j));
  }
  Bytes b(20);  // d | m | qs[16]
  b.f16(0, 0.25f);
  b.f16(2, -1.5f);
  for (int j = 0; j < 16; ++j) b.b[4 + j] = pat(j);
  const auto z = decode(GgmlType::kQ4_1, b);
  for (int e = 0; e < 32; ++e) {
    const int q = e < 16 ? pat(e) & 15 : pat(e - 16) >> 4;
    EXPECT_EQ(z[e], 0.25f * q - 1.5f) << e;
  }
}

TEST(QuantDecode, Q5_0AndQ5_1) {
  const uint32_t qh = 0xA5C3F00Fu;
  Bytes a(22);  // d | qh[4] | qs[16]
  a.f16(0, 0.125f);
  std::memcpy(&a.b[2], &qh, 4);
  for (int j = 0; j < 16; ++j) a.b[6 + j] = pat(j);
  Bytes b(24);  // d | m | qh[4] | qs[16]
  b.f16(0, 0.125f);
  b.f16(2, 2.0f);
  std::memcpy(&b.b[4], &qh, 4);
  for (int j = 0; j < 16; ++j) b.b[8 + j] = pat(j);
  const auto y = decode(GgmlType::kQ5_0, a);
  const auto z = decode(GgmlType::kQ5_1, b);
  for (int e = 0; e < 32; ++e) {
    const int lo4 = e < 16 ? pat(e) & 15 : pat(e - 16) >> 4;
    const int q = lo4 + 16 * static_cast<int>((qh >> e) & 1);
    EXPECT_EQ(y[e], 0.125f * (q - 16)) << e;
    EXPECT_EQ(z[e], 0.125f * q + 2.0f) << e;
  }
}

TEST(QuantDecode, Q8_0Q8_1Q8_K) {
  Bytes a(34);
  a.f16(0, 0.01f);
  for (int j = 0; j < 32; ++j) a.b[2 + j] = pat(j);
  Bytes b(36);  // d | s | qs: s plays no part in decoding
  b.f16(0, 0.01f);
  b.f16(2, 123.0f);
  for (int j = 0; j < 32; ++j) b.b[4 + j] = pat(j);
  const float d = fp16_to_f32(f32_to_fp16(0.01f));
  const auto y = decode(GgmlType::kQ8_0, a);
  const auto z = decode(GgmlType::kQ8_1, b);
  for (int e = 0; e < 32; ++e) {
    EXPECT_EQ(y[e], static_cast<float>(static_cast<int8_t>(pat(e))) * d);
    EXPECT_EQ(z[e], y[e]);
  }
  Bytes c(292);  // f32 d | qs[256] | bsums[16]
  const float dk = 0.003f;
  std::memcpy(&c.b[0], &dk, 4);
  for (int j = 0; j < 256; ++j) c.b[4 + j] = pat(j);
  const auto w = decode(GgmlType::kQ8_K, c);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(w[e], dk * static_cast<int8_t>(pat(e)));
}

TEST(QuantDecode, Q2_K) {
  Bytes a(84);  // scales[16] | qs[64] | d | dmin
  for (int i = 0; i < 16; ++i) a.b[i] = static_cast<uint8_t>((i % 16) | (((i * 7) % 16) << 4));
  for (int i = 0; i < 64; ++i) a.b[16 + i] = pat(i);
  a.f16(80, 0.5f);
  a.f16(82, 0.25f);
  const auto y = decode(GgmlType::kQ2_K, a);
  for (int e = 0; e < 256; ++e) {
    const int sub = e / 16;                    // 16 sub-blocks of 16 in element order
    const int byte = 32 * (e / 128) + e % 32;  // qs byte: 32 per half, element e % 32
    const int shift = 2 * ((e % 128) / 32);    // 2-bit field: which 32-run of the half
    const int q = (pat(byte) >> shift) & 3;
    const float sc = static_cast<float>(sub % 16);
    const float mn = static_cast<float>((sub * 7) % 16);
    EXPECT_EQ(y[e], 0.5f * sc * q - 0.25f * mn) << e;
  }
}

TEST(QuantDecode, Q3_K) {
  // Scale codes: 16 values in [0, 63] (value - 32 is the signed scale), packed as ggml does:
  // low nibbles in bytes 0..7 (sub-blocks 8..15 in the high nibbles), high 2 bits in 8..11.
  int code[16];
  for (int i = 0; i < 16; ++i) code[i] = (i * 23 + 5) % 64;
  Bytes a(110);  // hmask[32] | qs[64] | scales[12] | d
  for (int i = 0; i < 16; ++i) {
    a.b[96 + (i % 8)] |= static_cast<uint8_t>((code[i] & 15) << (i < 8 ? 0 : 4));
    a.b[96 + 8 + (i % 4)] |= static_cast<uint8_t>((code[i] >> 4) << (2 * (i / 4)));
  }
  for (int i = 0; i < 32; ++i) a.b[i] = pat(i + 100);
  for (int i = 0; i < 64; ++i) a.b[32 + i] = pat(i);
  a.f16(108, 0.5f);
  const auto y = decode(GgmlType::kQ3_K, a);
  for (int e = 0; e < 256; ++e) {
    const int sub = e / 16;
    const int q2 = (pat(32 * (e / 128) + e % 32) >> (2 * ((e % 128) / 32))) & 3;
    const int hbit = (pat(e % 32 + 100) >> (e / 32)) & 1;  // hmask bit = index of the 32-run
    const int q = q2 - (hbit ? 0 : 4);
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(code[sub] - 32) * static_cast<float>(q)) << e;
  }
}

// Q4_K / Q5_K share the 12-byte (scale, min) packing: pairs 0..3 in the low 6 bits of bytes 0..3
// (scales) and 4..7 (mins); pairs 4..7 keep their low nibbles in bytes 8..11 (scale low, min
// high) and their top 2 bits in the top 2 bits of bytes 0..3 (scales) and 4..7 (mins).
void pack_k4_scales(const int* sc, const int* mn, uint8_t* s) {
  for (int i = 0; i < 8; ++i) {
    if (i < 4) {
      s[i] |= static_cast<uint8_t>(sc[i]);
      s[i + 4] |= static_cast<uint8_t>(mn[i]);
    } else {
      s[i + 4] = static_cast<uint8_t>((sc[i] & 15) | ((mn[i] & 15) << 4));
      s[i - 4] |= static_cast<uint8_t>((sc[i] >> 4) << 6);
      s[i] |= static_cast<uint8_t>((mn[i] >> 4) << 6);
    }
  }
}

TEST(QuantDecode, Q4_KAndQ5_K) {
  int sc[8], mn[8];
  for (int i = 0; i < 8; ++i) {
    sc[i] = (i * 29 + 3) % 64;
    mn[i] = (i * 41 + 60) % 64;
  }
  Bytes a(144);  // d | dmin | scales[12] | qs[128]
  a.f16(0, 0.5f);
  a.f16(2, 0.125f);
  pack_k4_scales(sc, mn, &a.b[4]);
  for (int i = 0; i < 128; ++i) a.b[16 + i] = pat(i);
  Bytes b(176);  // d | dmin | scales[12] | qh[32] | qs[128]
  b.f16(0, 0.5f);
  b.f16(2, 0.125f);
  pack_k4_scales(sc, mn, &b.b[4]);
  for (int i = 0; i < 32; ++i) b.b[16 + i] = pat(i + 200);
  for (int i = 0; i < 128; ++i) b.b[48 + i] = pat(i);
  const auto y = decode(GgmlType::kQ4_K, a);
  const auto z = decode(GgmlType::kQ5_K, b);
  for (int e = 0; e < 256; ++e) {
    const int sub = e / 32;                      // 8 sub-blocks of 32
    const int byte = 32 * (e / 64) + e % 32;     // two sub-blocks share 32 bytes
    const int q4 = (pat(byte) >> (4 * (sub % 2))) & 15;
    const int q5 = q4 + 16 * ((pat(e % 32 + 200) >> sub) & 1);  // qh bit = sub-block index
    EXPECT_EQ(y[e], 0.5f * sc[sub] * q4 - 0.125f * mn[sub]) << e;
    EXPECT_EQ(z[e], 0.5f * sc[sub] * q5 - 0.125f * mn[sub]) << e;
  }
}

TEST(QuantDecode, Q6_K) {
  Bytes a(210);  // ql[128] | qh[64] | scales[16] (int8) | d
  for (int i = 0; i < 128; ++i) a.b[i] = pat(i);
  for (int i = 0; i < 64; ++i) a.b[128 + i] = pat(i + 128);
  for (int i = 0; i < 16; ++i) a.b[192 + i] = static_cast<uint8_t>(static_cast<int8_t>(i * 17 - 128));
  a.f16(208, 0.25f);
  const auto y = decode(GgmlType::kQ6_K, a);
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128;  // each half: 64 ql bytes, 32 qh bytes, 8 scales
    const int run = (e % 128) / 32;
    const int l = e % 32;
    const uint8_t ql = pat(64 * half + 32 * (run % 2) + l);
    const int lo = run < 2 ? ql & 15 : ql >> 4;
    const int hi = (pat(128 + 32 * half + l) >> (2 * run)) & 3;
    const int scale = static_cast<int8_t>(static_cast<uint8_t>((e / 16) * 17 - 128));
    EXPECT_EQ(y[e], 0.25f * scale * static_cast<float>((lo | (hi << 4)) - 32)) << e;
  }
}

TEST(QuantDecode, QuantizedSideFieldsOfActivationFormats) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>((i * 37) % 101 - 50) * 0.03f;
  std::vector<uint8_t> q1(8 * 36);
  quantize_row(GgmlType::kQ8_1, x.data(), q1.data(), 256);
  for (int b = 0; b < 8; ++b) {
    const uint8_t* blk = &q1[36 * b];
    uint16_t d, s;
    std::memcpy(&d, blk, 2);
    std::memcpy(&s, blk + 2, 2);
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += static_cast<int8_t>(blk[4 + j]);
    EXPECT_EQ(fp16_to_f32(s), fp16_to_f32(f32_to_fp16(fp16_to_f32(d) * sum)));
  }
  std::vector<uint8_t> qk(292);
  quantize_row(GgmlType::kQ8_K, x.data(), qk.data(), 256);
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int j = 0; j < 16; ++j) sum += static_cast<int8_t>(qk[4 + 16 * g + j]);
    int16_t bs;
    std::memcpy(&bs, &qk[260 + 2 * g], 2);
    EXPECT_EQ(bs, sum);
  }
}

}  // namespace
}  // namespace ridge::kernels
