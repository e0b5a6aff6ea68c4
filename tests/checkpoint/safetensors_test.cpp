// The safetensors reader against files laid out by hand from the format's definition (an 8-byte
// little-endian header length, a JSON header of dtype / shape / data_offsets per tensor, the
// data), and each malformed form refused in one line naming the file.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"

namespace ridge::checkpoint {
namespace safetensors_test {

std::vector<uint8_t> file_of(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> f(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  f.insert(f.end(), header.begin(), header.end());
  f.insert(f.end(), data.begin(), data.end());
  return f;
}

std::vector<uint8_t> bytes_of_floats(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(Safetensors, ReadsTensorsWhereTheyLie) {
  std::vector<uint8_t> data = bytes_of_floats({1.0f, 2.0f, 3.0f, 4.0f});
  for (uint8_t b : {0x80, 0x3f, 0x00, 0x40, 0x40, 0x40}) data.push_back(b);  // bf16 1, 2, 3
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]},)"
      R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  const std::vector<uint8_t> bytes = file_of(header, data);
  auto f = SafetensorsFile::parse(bytes, "t.safetensors");
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->tensors().size(), 2u);
  const Tensor* a = f->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, Dtype::kF32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a->n_elements(), 4);
  ASSERT_EQ(a->data.size(), 16u);
  float v[4];
  std::memcpy(v, a->data.data(), 16);
  EXPECT_EQ(v[3], 4.0f);
  EXPECT_EQ(a->data.data(), bytes.data() + 8 + header.size());  // not copied
  const Tensor* b = f->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, Dtype::kBF16);
  EXPECT_EQ(b->data[1], 0x3f);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->find("c"), nullptr);
}

TEST(Safetensors, RefusesMalformedFilesInOneLine) {
  const std::vector<uint8_t> data16 = bytes_of_floats({1, 2, 3, 4});
  struct Case {
    const char* what;
    std::vector<uint8_t> bytes;
    const char* says;
  };
  const std::string ok_a = R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]})";
  std::vector<uint8_t> long_header = file_of("{}", {});
  long_header[0] = 0xff;
  const std::vector<Case> cases = {
      {"too short", {1, 2, 3}, "too short"},
      {"header past the end", long_header, "header of"},
      {"not an object", file_of("[1,2]", {}), "not a JSON object"},
      {"not JSON", file_of("{\"a\":", {}), "not a JSON object"},
      {"unknown dtype", file_of(R"({"a":{"dtype":"F33","shape":[4],"data_offsets":[0,16]}})", data16), "F33"},
      {"size not the shape's", file_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data16), "16 bytes"},
      {"past the data", file_of(R"({"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})", data16), "outside"},
      {"negative dimension", file_of(R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", data16), "negative"},
      {"missing offsets", file_of(R"({"a":{"dtype":"F32","shape":[4]}})", data16), "data_offsets"},
      {"overlap", file_of("{" + ok_a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data16), "tile"},
      {"hole", file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data16), "tile"},
      {"data left over", file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data16), "cover 8 bytes"},
      {"bad metadata", file_of("{" + ok_a + R"(,"__metadata__":{"x":1}})", data16), "__metadata__"},
  };
  for (const Case& c : cases) {
    auto f = SafetensorsFile::parse(c.bytes, "bad.safetensors");
    ASSERT_FALSE(f.ok()) << c.what;
    const std::string& msg = f.status().message();
    EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << c.what << ": " << msg;
    EXPECT_NE(msg.find(c.says), std::string::npos) << c.what << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << c.what;
  }
}

class SafetensorsDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ridge-st-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream(dir_ / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                       static_cast<std::streamsize>(bytes.size()));
  }
  void write_text(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::filesystem::path dir_;
};

TEST_F(SafetensorsDir, OneFile) {
  write("model.safetensors", file_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", bytes_of_floats({5, 6})));
  auto s = SafetensorsSet::open_dir(dir_.string());
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->tensors().size(), 1u);
  const Tensor* w = s->find("w");
  ASSERT_NE(w, nullptr);
  float v[2];
  std::memcpy(v, w->data.data(), 8);
  EXPECT_EQ(v[1], 6.0f);
}

TEST_F(SafetensorsDir, ShardsNamedByTheIndex) {
  write("model-00001-of-00002.safetensors",
        file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", bytes_of_floats({1})));
  write("model-00002-of-00002.safetensors",
        file_of(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", bytes_of_floats({2})));
  write_text("model.safetensors.index.json",
             R"({"metadata":{"total_size":8},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
             R"("b":"model-00002-of-00002.safetensors"}})");
  auto s = SafetensorsSet::open_dir(dir_.string());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->tensors().size(), 2u);
  EXPECT_EQ(s->files().size(), 2u);
  ASSERT_NE(s->find("b"), nullptr);
  float v = 0;
  std::memcpy(&v, s->find("b")->data.data(), 4);
  EXPECT_EQ(v, 2.0f);
}

TEST_F(SafetensorsDir, RefusesAnIndexThatDoesNotMatchItsFiles) {
  write("s1.safetensors", file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", bytes_of_floats({1})));
  write_text("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors","c":"s1.safetensors"}})");
  auto s = SafetensorsSet::open_dir(dir_.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'c'"), std::string::npos) << s.status().message();
  write_text("model.safetensors.index.json", R"({"weight_map":{"a":"../s1.safetensors"}})");
  s = SafetensorsSet::open_dir(dir_.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not a file of this folder"), std::string::npos) << s.status().message();
  write_text("model.safetensors.index.json", R"({"weight_map":{"a":"missing.safetensors"}})");
  s = SafetensorsSet::open_dir(dir_.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("missing.safetensors"), std::string::npos) << s.status().message();
}

TEST_F(SafetensorsDir, RefusesAFolderWithoutWeights) {
  auto s = SafetensorsSet::open_dir(dir_.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("model.safetensors"), std::string::npos);
}

}  // namespace safetensors_test
}  // namespace ridge::checkpoint
