// `--spec mtp` (the model's MTP head drafts) in `ridge run` (a Session) and `ridge batch` (the
// engine) on a synthetic Qwen3.5 file with an MTP block: the same text as without it, greedy and
// sampled (match rule); a file without the head is refused in one line.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "run_binary.h"

namespace {

using ridge::testing::run_ridge;

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()))).string();
}

// The generated text: everything before the stats line.
std::string generated(const std::string& out) { return out.substr(0, out.find("\nload:")); }

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(MtpCli, RunAndBatchGiveThePlainOutput) {
  const std::string model = temp_file("ridge_mtp_model_") + ".gguf";
  ASSERT_EQ(run_ridge("synth --preset tiny-qwen35-mtp --type f32 --seed 7 -o " + model).rc, 0);
  for (const std::string sampling : {"--temp 0", "--temp 0.8 --seed 3"}) {
    const std::string args = "run -t 1 -m " + model + " -p 'Hello world' -n 48 " + sampling;
    auto plain = run_ridge(args);
    ASSERT_EQ(plain.rc, 0) << plain.text;
    auto mtp = run_ridge(args + " --spec mtp --spec-max 4 --spec-rule match");
    ASSERT_EQ(mtp.rc, 0) << mtp.text;
    EXPECT_EQ(generated(mtp.text), generated(plain.text)) << sampling;
    EXPECT_NE(mtp.text.find("speculative (mtp"), std::string::npos) << mtp.text;
  }
  const std::string prompts = temp_file("ridge_mtp_prompts_");
  {
    std::ofstream f(prompts);
    f << R"({"prompt": "Once upon a time", "max_tokens": 40, "temperature": 0})" << "\n"
      << R"({"prompt": "Hello world", "max_tokens": 32, "temperature": 0.9, "seed": 4})" << "\n"
      << R"({"prompt": "The quick brown fox", "max_tokens": 24, "temperature": 0})" << "\n";
  }
  const std::string plain_out = temp_file("ridge_mtp_plain_out_"), mtp_out = temp_file("ridge_mtp_out_");
  auto plain = run_ridge("batch -q -t 1 -m " + model + " --prompts " + prompts + " --out " + plain_out);
  ASSERT_EQ(plain.rc, 0) << plain.text;
  auto mtp = run_ridge("batch -q -t 1 -m " + model + " --prompts " + prompts + " --out " + mtp_out +
                       " --spec mtp --spec-max 4 --spec-rule match");
  ASSERT_EQ(mtp.rc, 0) << mtp.text;
  EXPECT_NE(mtp.text.find("speculation: MTP head"), std::string::npos) << mtp.text;
  const auto want = read_lines(plain_out), got = read_lines(mtp_out);
  ASSERT_EQ(want.size(), 3u);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(got[i]["tokens"], want[i]["tokens"]) << i;
  for (const std::string& f : {model, prompts, plain_out, mtp_out}) std::filesystem::remove(f);
}

TEST(MtpCli, AModelWithoutTheHeadIsRefused) {
  const std::string model = temp_file("ridge_no_mtp_model_") + ".gguf";
  ASSERT_EQ(run_ridge("synth --preset tiny-qwen35 --type f32 -o " + model).rc, 0);
  auto run = run_ridge("run -m " + model + " -p hi -n 4 --spec mtp");
  EXPECT_NE(run.rc, 0);
  EXPECT_NE(run.text.find("--spec mtp: tiny-qwen35 has no MTP head"), std::string::npos) << run.text;
  auto draft = run_ridge("run -m " + model + " -p hi -n 4 --spec mtp --draft " + model);
  EXPECT_NE(draft.rc, 0);
  EXPECT_NE(draft.text.find("--draft goes with --spec draft"), std::string::npos) << draft.text;
  auto synth = run_ridge("synth --preset tiny-qwen3 --mtp -o " + model);
  EXPECT_NE(synth.rc, 0);
  EXPECT_NE(synth.text.find("--mtp needs a qwen35 or qwen35moe preset"), std::string::npos) << synth.text;
  std::filesystem::remove(model);
}

}  // namespace
