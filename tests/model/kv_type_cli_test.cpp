// --kv-type through the built binary: every command that takes it rejects an unknown name with
// one line and exit 2; q8_0 on a head_dim-8 model is refused; bf16 runs.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "run_binary.h"
#include "test_util.h"

namespace ridge::model {
namespace {

using Out = ::ridge::testing::CmdOutput;

Out sh(const std::string& args, const std::string& stdin_text = "") {
  return ::ridge::testing::run_ridge(args, stdin_text);
}

class KvTypeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(testing::stories_path())) GTEST_SKIP() << "no stories260K.gguf";
    model_ = " -m " + testing::stories_path() + " ";
  }
  std::string model_;
};

TEST_F(KvTypeCli, UnknownTypeIsOneLineUsageError) {
  for (const std::string cmd : {"run -p x", "chat", "bench", "serve --port 0", "batch --prompts /dev/null"}) {
    SCOPED_TRACE(cmd);
    const Out o = sh(cmd + model_ + "--kv-type q4_0");
    EXPECT_EQ(o.rc, 2) << o.text;
    EXPECT_EQ(o.text.rfind("ridge: error: ", 0), 0u) << o.text;
    EXPECT_NE(o.text.find("unknown KV type 'q4_0' (f32, f16, bf16, q8_0, fp8)"), std::string::npos) << o.text;
    EXPECT_EQ(o.text.find('\n'), o.text.size() - 1) << o.text;
  }
}

// fp8 is a KV type (the cost model and a GPU backend know it) that the CPU's cache does not store.
TEST_F(KvTypeCli, Fp8IsRefusedOnTheCpuInOneLine) {
  for (const std::string cmd : {"run -p x -n 1", "bench --batch 1 --ctx 8 -n 1 --no-probe"}) {
    SCOPED_TRACE(cmd);
    const Out o = sh(cmd + model_ + "-t 1 --kv-type fp8");
    EXPECT_EQ(o.rc, 2) << o.text;
    EXPECT_EQ(o.text.rfind("ridge: error: ", 0), 0u) << o.text;
    EXPECT_NE(o.text.find("fp8 needs a GPU backend"), std::string::npos) << o.text;
    EXPECT_EQ(o.text.find('\n'), o.text.size() - 1) << o.text;
  }
}

TEST_F(KvTypeCli, Q8RefusedForHeadDim8) {
  const Out o = sh("run" + model_ + "-t 1 -p x -n 1 --kv-type q8_0");
  EXPECT_EQ(o.rc, 2) << o.text;
  EXPECT_NE(o.text.find("q8_0 needs a head_dim that is a multiple of 32, this model's is 8"),
            std::string::npos) << o.text;
}

TEST_F(KvTypeCli, Bf16Runs) {
  const Out o = sh("run" + model_ + "-t 1 -p 'Once upon a time' -n 12 --temp 0 --kv-type bf16");
  EXPECT_EQ(o.rc, 0) << o.text;
  EXPECT_NE(o.text.find(", there was a little girl named Lily"), std::string::npos) << o.text;
}

}  // namespace
}  // namespace ridge::model
