// Every malformed input gives one error line naming the file, the field and the offset.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace ridge::gguf {
namespace {

// Hand-assembles GGUF bytes so each test can break exactly one thing.
struct Raw {
  std::vector<uint8_t> b;
  template <typename T>
  Raw& pod(T x) {
    const size_t at = b.size();
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &x, sizeof(T));
    return *this;
  }
  Raw& str(const std::string& s) {
    pod<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return pod<uint32_t>(kMagic).pod<uint32_t>(version).pod<uint64_t>(n_tensors).pod<uint64_t>(n_kv);
  }
  Raw& kv_u32(const std::string& key, uint32_t v) { return str(key).pod<uint32_t>(4).pod<uint32_t>(v); }
  Raw& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).pod<uint32_t>(static_cast<uint32_t>(dims.size()));
    for (auto d : dims) pod<uint64_t>(d);
    return pod<uint32_t>(type).pod<uint64_t>(offset);
  }
  Raw& pad_to(size_t alignment) {
    while (b.size() % alignment) b.push_back(0);
    return *this;
  }
  Raw& zeros(size_t n) {
    b.resize(b.size() + n, 0);
    return *this;
  }
};

std::string parse_error(const Raw& r) {
  auto f = File::parse(r.b, "bad.gguf");
  if (f.ok()) return "";
  return f.status().message();
}

void expect_error(const Raw& r, const std::string& needle) {
  const std::string msg = parse_error(r);
  ASSERT_FALSE(msg.empty()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(msg.find("bad.gguf"), std::string::npos) << msg;
  EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "multi-line: " << msg;
}

TEST(GgufHardening, MinimalValidFileParses) {
  Raw r;
  r.header(1, 1).kv_u32("a", 1).tensor("t", {32}, 0, 0).pad_to(32).zeros(128);
  auto f = File::parse(r.b, "ok.gguf");
  ASSERT_TRUE(f.ok()) << f.status().message();
}

TEST(GgufHardening, BadMagic) {
  Raw r;
  r.pod<uint32_t>(0x12345678).pod<uint32_t>(3).pod<uint64_t>(0).pod<uint64_t>(0);
  expect_error(r, "magic at offset 0");
}

TEST(GgufHardening, UnknownVersion) {
  Raw r;
  r.header(0, 0, 7);
  expect_error(r, "unsupported GGUF version 7");
  Raw r1;
  r1.header(0, 0, 1);
  expect_error(r1, "version at offset 4");
}

TEST(GgufHardening, AbsurdCounts) {
  Raw r;
  r.header(1ull << 60, 0);
  expect_error(r, "tensor_count at offset 8");
  Raw r2;
  r2.header(0, 1ull << 62);
  expect_error(r2, "metadata_kv_count at offset 16");
}

TEST(GgufHardening, HugeStringAndArray) {
  Raw r;
  r.header(0, 1).pod<uint64_t>(1ull << 50).zeros(64);
  expect_error(r, "metadata key #0 at offset 24");
  Raw r2;
  r2.header(0, 1).str("arr").pod<uint32_t>(9).pod<uint32_t>(8).pod<uint64_t>(1ull << 40);
  expect_error(r2, "metadata 'arr'");
  Raw r3;  // array of arrays nested past the depth limit
  r3.header(0, 1).str("deep");
  r3.pod<uint32_t>(9);
  for (int i = 0; i < 20; ++i) r3.pod<uint32_t>(9).pod<uint64_t>(1);
  r3.zeros(64);
  expect_error(r3, "nested deeper");
}

TEST(GgufHardening, NonUtf8AndDuplicateKeys) {
  Raw r;
  r.header(0, 1).str(std::string("k\xff", 2)).pod<uint32_t>(4).pod<uint32_t>(1);
  expect_error(r, "not valid UTF-8");
  Raw r2;
  r2.header(0, 2).kv_u32("dup", 1).kv_u32("dup", 2);
  expect_error(r2, "duplicate key");
}

TEST(GgufHardening, BadValueTypeAndBool) {
  Raw r;
  r.header(0, 1).str("k").pod<uint32_t>(99).zeros(8);
  expect_error(r, "unknown value type 99");
  Raw r2;
  r2.header(0, 1).str("k").pod<uint32_t>(7).pod<uint8_t>(5);
  expect_error(r2, "neither 0 nor 1");
}

TEST(GgufHardening, BadAlignment) {
  Raw r;
  r.header(0, 1).kv_u32("general.alignment", 24);
  expect_error(r, "general.alignment");
}

TEST(GgufHardening, TensorProblems) {
  {
    Raw r;  // past the end of the file
    r.header(1, 0).tensor("t", {32, 4}, 0, 0).pad_to(32).zeros(100);
    expect_error(r, "tensor 't': data ends at byte");
  }
  {
    Raw r;  // overlapping
    r.header(2, 0).tensor("a", {32}, 0, 0).tensor("b", {32}, 0, 128).pad_to(32).zeros(256);
    auto ok = File::parse(r.b, "x");  // f32 x 32 = 128 bytes: adjacent, no overlap
    ASSERT_TRUE(ok.ok()) << ok.status().message();
    Raw r2;
    r2.header(2, 0).tensor("a", {32}, 0, 0).tensor("b", {32}, 0, 96).pad_to(32).zeros(256);
    expect_error(r2, "overlaps tensor 'a'");
    Raw r3;
    r3.header(2, 0).tensor("a", {64}, 0, 0).tensor("b", {32}, 0, 128).pad_to(32).zeros(512);
    expect_error(r3, "overlaps tensor");
  }
  {
    Raw r;  // misaligned offset
    r.header(1, 0).tensor("t", {32}, 0, 4).pad_to(32).zeros(256);
    expect_error(r, "not a multiple of the alignment");
  }
  {
    Raw r;  // duplicate names
    r.header(2, 0).tensor("t", {32}, 0, 0).tensor("t", {32}, 0, 128).pad_to(32).zeros(512);
    expect_error(r, "duplicate tensor name");
  }
  {
    Raw r;  // unknown type, bad dims, ragged quantized row, overflowing shape
    r.header(1, 0).tensor("t", {32}, 4, 0).pad_to(32).zeros(64);
    expect_error(r, "unknown tensor type id 4");
    Raw r2;
    r2.header(1, 0).tensor("t", {}, 0, 0).pad_to(32).zeros(64);
    expect_error(r2, "0 dimensions");
    Raw r3;
    r3.header(1, 0).tensor("t", {33}, 8, 0).pad_to(32).zeros(64);
    expect_error(r3, "not a multiple of the q8_0 block size");
    Raw r4;
    r4.header(1, 0).tensor("t", {1ull << 40, 1ull << 40}, 0, 0).pad_to(32).zeros(64);
    expect_error(r4, "overflow");
  }
}

// Every truncation of a valid file is an error, never a crash.
TEST(GgufHardening, EveryTruncationFails) {
  Writer w;
  w.set("general.architecture", make_string("llama"));
  w.set("tokens", make_string_array({"a", "bb", "ccc"}));
  w.set("scores", make_f32_array({1.0f, 2.0f, 3.0f}));
  std::vector<uint8_t> d(32 * 4 * 2, 1);
  ASSERT_TRUE(w.add_tensor_data("w", GgmlType::kF32, {32, 2}, d).ok());
  auto bytes = w.write_to_memory();
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(File::parse(*bytes, "full").ok());
  for (size_t n = 0; n < bytes->size(); ++n) {
    std::vector<uint8_t> prefix(bytes->begin(), bytes->begin() + static_cast<long>(n));
    auto f = File::parse(prefix, "trunc.gguf");
    EXPECT_FALSE(f.ok()) << "prefix of " << n << " bytes parsed";
  }
}

TEST(GgufHardening, OpenErrors) {
  auto f = File::open("/nonexistent/file.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("/nonexistent/file.gguf"), std::string::npos);
  auto d = File::open("/tmp");
  ASSERT_FALSE(d.ok());
}

}  // namespace
}  // namespace ridge::gguf
