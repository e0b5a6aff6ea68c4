// merge_split: the parts of a split GGUF (llama-gguf-split's layout) become the one file they came
// from; parts out of order, of another split or missing are refused in one line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/split.h"
#include "gguf/writer.h"

namespace ridge::gguf {
namespace split_test {

struct Tensor {
  std::string name;
  std::vector<uint8_t> bytes;
};

std::vector<Tensor> tensors() {
  std::vector<Tensor> out;
  for (int i = 0; i < 5; ++i) {
    Tensor t{"t" + std::to_string(i), std::vector<uint8_t>(static_cast<size_t>(4 * (8 + 3 * i)))};
    for (size_t k = 0; k < t.bytes.size(); ++k) t.bytes[k] = static_cast<uint8_t>(31 * i + k);
    out.push_back(std::move(t));
  }
  return out;
}

// Part `no` of `count` holding tensors [first, last); part 0 also the model's metadata.
std::string write_part(const std::string& dir, int no, int count, int first, int last, int total) {
  Writer w;
  if (no == 0) {
    w.set("general.architecture", make_string("llama"));
    w.set("llama.block_count", make_u32(2));
  }
  w.set("split.no", make_u32(static_cast<uint32_t>(no)));
  w.set("split.count", make_u32(static_cast<uint32_t>(count)));
  w.set("split.tensors.count", make_i32(total));
  const auto ts = tensors();
  for (int i = first; i < last; ++i) {
    EXPECT_TRUE(w.add_tensor_data(ts[i].name, GgmlType::kF32, {ts[i].bytes.size() / 4}, ts[i].bytes).ok());
  }
  const std::string path = dir + "/m-" + std::to_string(no + 1) + ".gguf";
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

class MergeSplit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/merge_split_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(MergeSplit, PartsBecomeOneFile) {
  const std::vector<std::string> parts = {write_part(dir_, 0, 3, 0, 2, 5), write_part(dir_, 1, 3, 2, 4, 5),
                                          write_part(dir_, 2, 3, 4, 5, 5)};
  const std::string out = dir_ + "/merged.gguf";
  ASSERT_TRUE(merge_split(parts, out).ok());
  auto f = File::open(out);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->architecture(), "llama");
  EXPECT_FALSE(f->has("split.count"));
  EXPECT_FALSE(f->has("split.no"));
  const auto ts = tensors();
  ASSERT_EQ(f->tensors().size(), ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    EXPECT_EQ(f->tensors()[i].name, ts[i].name);
    ASSERT_EQ(f->tensors()[i].n_bytes, ts[i].bytes.size());
    EXPECT_EQ(std::memcmp(f->tensors()[i].data, ts[i].bytes.data(), ts[i].bytes.size()), 0) << ts[i].name;
  }
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
}

TEST_F(MergeSplit, RefusesWrongParts) {
  const std::string p0 = write_part(dir_, 0, 3, 0, 2, 5), p1 = write_part(dir_, 1, 3, 2, 4, 5),
                    p2 = write_part(dir_, 2, 3, 4, 5, 5);
  const std::string out = dir_ + "/merged.gguf";
  auto expect_error = [&](const std::vector<std::string>& parts, const std::string& what) {
    const Status s = merge_split(parts, out);
    ASSERT_FALSE(s.ok()) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
    EXPECT_FALSE(std::filesystem::exists(out));
  };
  expect_error({p0, p2, p1}, "expected part 1 of 3");
  expect_error({p0, p1}, "of split.count 3");
  expect_error({p0, p1, dir_ + "/absent.gguf"}, "absent.gguf");
  std::filesystem::create_directories(dir_ + "/other");
  const std::string other = write_part(dir_ + "/other", 2, 3, 4, 4, 5);  // a third part with no tensor
  expect_error({p0, p1, other}, "split.tensors.count 5 but the parts hold 4");
}

}  // namespace split_test
}  // namespace ridge::gguf
