// `ridge imatrix` writes llama-imatrix's file for the same model and text (the reference in
// tests/quality/data), `--show` reads it, and `ridge quantize --imatrix` quantizes with it (its
// tensors matched by name and shape); bad input refused in one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "run_binary.h"
#include "test_files.h"

namespace {

using ridge::testing::kQualityData;
using ridge::testing::run_ridge;

class ImatrixCli : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = (std::filesystem::temp_directory_path() / ("ridge_imatrix_" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(tmp_);
    ASSERT_EQ(run_ridge("synth --preset tiny-qwen3 --type f32 --seed 7 -t 1 -o " + model()).rc, 0);
  }
  void TearDown() override { std::filesystem::remove_all(tmp_); }
  std::string model() const { return tmp_ + "/tiny-qwen3.gguf"; }
  std::string tmp_;
};

TEST_F(ImatrixCli, WritesShowsAndQuantizesWithIt) {
  const std::string im = tmp_ + "/im.gguf";
  auto out = run_ridge("imatrix -m " + model() + " -f " + kQualityData + "story.txt -c 64 -b 64 -t 2 -o " + im);
  ASSERT_EQ(out.rc, 0) << out.text;
  EXPECT_NE(out.text.find("imatrix: 14 weights over 38 chunks of 64 tokens"), std::string::npos) << out.text;
  out = run_ridge("imatrix --show " + im);
  ASSERT_EQ(out.rc, 0) << out.text;
  EXPECT_NE(out.text.find("14 entries, 38 chunks of 64 tokens"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("blk.1.ffn_down.weight                       160    1       2432"), std::string::npos) << out.text;
  // llama-imatrix's file for the same model serves ridge quantize.
  out = run_ridge("quantize " + model() + " " + tmp_ + "/q.gguf q4_0 --imatrix " + kQualityData + "imatrix_reference.gguf");
  ASSERT_EQ(out.rc, 0) << out.text;
  // The embedding (tied to the output here) has no entry: llama-imatrix collects blk.* only.
  EXPECT_NE(out.text.find("14 tensors quantized with its weights, 1 without an entry (plain squared error): "
                          "token_embd.weight"), std::string::npos) << out.text;
  out = run_ridge("run -m " + tmp_ + "/q.gguf -p hello -n 4 --temp 0");
  EXPECT_EQ(out.rc, 0) << out.text;
}

TEST_F(ImatrixCli, BadInputIsRefusedInOneLine) {
  auto out = run_ridge("imatrix -m " + model());
  EXPECT_NE(out.rc, 0);
  EXPECT_NE(out.text.find("imatrix: give the model (-m) and the text (-f), or --show FILE"), std::string::npos) << out.text;
  out = run_ridge("imatrix --show " + model());
  EXPECT_NE(out.rc, 0);
  EXPECT_NE(out.text.find("not an importance matrix"), std::string::npos) << out.text;
  // An importance matrix of another model: its columns do not match.
  ASSERT_EQ(run_ridge("synth --preset tiny-llama --type f32 --seed 1 -t 1 -o " + tmp_ + "/llama.gguf").rc, 0);
  out = run_ridge("quantize " + tmp_ + "/llama.gguf " + tmp_ + "/q.gguf q4_0 --imatrix " + kQualityData + "imatrix_reference.gguf");
  EXPECT_NE(out.rc, 0);
  EXPECT_NE(out.text.find("the importance matrix has"), std::string::npos) << out.text;
}

}  // namespace
