#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace ridge::gguf {
namespace {

Value nested_array() {
  ArrayValue inner;
  inner.elem_type = ValueType::kInt16;
  inner.items = {Value{ValueStorage(std::in_place_index<3>, int16_t{-7})}, Value{ValueStorage(std::in_place_index<3>, int16_t{9})}};
  ArrayValue outer;
  outer.elem_type = ValueType::kArray;
  outer.items = {Value{ValueStorage(std::in_place_index<9>, inner)}, Value{ValueStorage(std::in_place_index<9>, inner)}};
  return Value{ValueStorage(std::in_place_index<9>, outer)};
}

TEST(GgufRoundTrip, EveryValueTypeAndTensors) {
  Writer w;
  w.set("general.architecture", make_string("llama"));
  w.set("t.u8", Value{ValueStorage(std::in_place_index<0>, uint8_t{200})});
  w.set("t.i8", Value{ValueStorage(std::in_place_index<1>, int8_t{-100})});
  w.set("t.u16", Value{ValueStorage(std::in_place_index<2>, uint16_t{60000})});
  w.set("t.i16", Value{ValueStorage(std::in_place_index<3>, int16_t{-30000})});
  w.set("t.u32", make_u32(4000000000u));
  w.set("t.i32", make_i32(-2000000000));
  w.set("t.f32", make_f32(1.5f));
  w.set("t.bool", make_bool(true));
  w.set("t.str", make_string("héllo"));
  w.set("t.u64", make_u64(1ull << 40));
  w.set("t.i64", Value{ValueStorage(std::in_place_index<11>, int64_t{-(1ll << 40)})});
  w.set("t.f64", Value{ValueStorage(std::in_place_index<12>, 2.25)});
  w.set("t.strs", make_string_array({"a", "", "ccc"}));
  w.set("t.nested", nested_array());
  std::vector<float> data(64 * 3);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f;
  ASSERT_TRUE(w.add_tensor_data("a", GgmlType::kF32, {64, 3},
                                std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size() * 4)).ok());
  std::vector<uint8_t> q8(34 * 2, 7);
  ASSERT_TRUE(w.add_tensor_data("b", GgmlType::kQ8_0, {64}, q8).ok());

  auto bytes = w.write_to_memory();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto f = File::parse(*bytes, "mem.gguf");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_EQ(*f->get_int("t.u8"), 200);
  EXPECT_EQ(*f->get_int("t.i8"), -100);
  EXPECT_EQ(*f->get_int("t.u16"), 60000);
  EXPECT_EQ(*f->get_int("t.i16"), -30000);
  EXPECT_EQ(*f->get_uint("t.u32"), 4000000000u);
  EXPECT_EQ(*f->get_int("t.i32"), -2000000000);
  EXPECT_FLOAT_EQ(static_cast<float>(*f->get_float("t.f32")), 1.5f);
  EXPECT_TRUE(*f->get_bool("t.bool"));
  EXPECT_EQ(*f->get_string("t.str"), "héllo");
  EXPECT_EQ(*f->get_uint("t.u64"), 1ull << 40);
  EXPECT_EQ(*f->get_int("t.i64"), -(1ll << 40));
  EXPECT_DOUBLE_EQ(*f->get_float("t.f64"), 2.25);
  EXPECT_EQ(*f->get_string_array("t.strs"), (std::vector<std::string>{"a", "", "ccc"}));
  const ArrayValue* nested = f->find("t.nested")->as_array();
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->items.size(), 2u);
  EXPECT_EQ(*nested->items[1].as_array()->items[0].as_int(), -7);

  EXPECT_FALSE(f->get_string("t.u8").ok());
  EXPECT_FALSE(f->get_int("missing").ok());
  EXPECT_EQ(*f->get_int_or("missing", 5), 5);

  ASSERT_EQ(f->tensors().size(), 2u);
  const TensorInfo* a = f->find_tensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<uint64_t>{64, 3}));
  EXPECT_EQ(a->n_bytes, 64u * 3 * 4);
  EXPECT_EQ(std::memcmp(a->data, data.data(), a->n_bytes), 0);
}

}  // namespace
}  // namespace ridge::gguf

namespace ridge::gguf {
namespace {

TEST(GgufRoundTrip, TensorsAreAlignedAndIndependent) {
  for (uint64_t alignment : {32ull, 64ull}) {
    Writer w(alignment);
    std::vector<uint8_t> b1(10 * 2, 1), b2(6 * 2, 2);
    ASSERT_TRUE(w.add_tensor_data("x", GgmlType::kF16, {10}, b1).ok());
    ASSERT_TRUE(w.add_tensor_data("y", GgmlType::kBF16, {6}, b2).ok());
    auto bytes = w.write_to_memory();
    ASSERT_TRUE(bytes.ok());
    auto f = File::parse(*bytes, "mem.gguf");
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(f->alignment(), alignment);
    for (const auto& t : f->tensors()) {
      EXPECT_EQ((t.data - bytes->data()) % alignment, 0u) << t.name;
    }
    EXPECT_EQ(f->find_tensor("y")->data[0], 2);
  }
}

TEST(GgufRoundTrip, WriterRejectsBadTensors) {
  Writer w;
  std::vector<uint8_t> b(34);
  EXPECT_FALSE(w.add_tensor_data("q", GgmlType::kQ8_0, {16}, b).ok());  // not a block multiple
  EXPECT_TRUE(w.add_tensor_data("q", GgmlType::kQ8_0, {32}, b).ok());
  EXPECT_FALSE(w.add_tensor_data("q", GgmlType::kQ8_0, {32}, b).ok());  // duplicate
}

// The same file opened mapped and read into huge pages: the same bytes, metadata and tensors;
// the copy is huge-page aligned; a file cut short fails the same way in both.
TEST(GgufRead, HugePageCopyMatchesMapping) {
  Writer w;
  w.set("general.architecture", make_string("llama"));
  w.set("t.u32", make_u32(77));
  std::vector<uint8_t> data(3 * 1024 * 1024 + 100);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 11));
  ASSERT_TRUE(w.add_tensor_data("big", GgmlType::kI8, {data.size()}, data).ok());
  const std::string path = ::testing::TempDir() + "/huge_copy.gguf";
  ASSERT_TRUE(w.write(path).ok());
  auto mapped = File::open(path, {}, Backing::kMapped);
  auto copied = File::open(path, {}, Backing::kHugePages);
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  ASSERT_TRUE(copied.ok()) << copied.status().message();
  ASSERT_EQ(mapped->file_size(), copied->file_size());
  EXPECT_NE(mapped->bytes().data(), copied->bytes().data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copied->bytes().data()) % (2u << 20), 0u);
  EXPECT_EQ(std::memcmp(mapped->bytes().data(), copied->bytes().data(), mapped->file_size()), 0);
  EXPECT_EQ(*copied->get_uint("t.u32"), 77u);
  const TensorInfo* t = copied->find_tensor("big");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::memcmp(t->data, data.data(), data.size()), 0);
  EXPECT_GE(t->data, copied->bytes().data());

  std::filesystem::resize_file(path, mapped->file_size() - 4096);  // into the tensor data
  auto cut_mapped = File::open(path, {}, Backing::kMapped);
  auto cut_copied = File::open(path, {}, Backing::kHugePages);
  ASSERT_FALSE(cut_mapped.ok());
  ASSERT_FALSE(cut_copied.ok());
  EXPECT_EQ(cut_mapped.status().message(), cut_copied.status().message());
  EXPECT_FALSE(File::open("/nonexistent/file.gguf", {}, Backing::kHugePages).ok());
  EXPECT_FALSE(File::open("/tmp", {}, Backing::kHugePages).ok());
  std::filesystem::remove(path);
}

TEST(GgufRead, Stories260K) {
  const std::string path = std::string(RIDGE_SHARED_DIR) + "/models/stories260K/stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared data absent: " << path;
  auto f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_EQ(f->tensors().size(), 48u);
  EXPECT_EQ(*f->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(*f->get_int("llama.block_count"), 5);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->size(), 512u);
  const TensorInfo* emb = f->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(emb->type, GgmlType::kF32);
}

}  // namespace
}  // namespace ridge::gguf
