// `ridge tokenize` end to end: ids as llama.cpp produced them (peer data), exit codes.
#include <gtest/gtest.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ridge::tokenizer {
namespace {

struct RunResult {
  int exit_code;
  std::string out;
};

RunResult run(const std::string& args) {
  const std::string cmd = std::string(RIDGE_BINARY) + " tokenize " + args + " 2>&1";
  RunResult r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) r.out += buf;
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(TokenizeCli, IdsMatchPeer) {
  const std::string model = testing::shared_path("models/stories260K/stories260K.gguf");
  if (!testing::shared_exists("models/stories260K/stories260K.gguf")) GTEST_SKIP() << "no " << model;
  const auto data = nlohmann::json::parse(
      testing::read_file(std::string(RIDGE_SOURCE_DIR) + "/tests/tokenizer/data/peer_stories260k.json"));
  for (const auto& c : data.at("cases")) {
    if (c.at("text") != "Once upon a time, there was a little girl named Lily.") continue;
    auto want = c.at("ids").get<std::vector<int>>();
    want.insert(want.begin(), data.at("bos").get<int>());  // the CLI adds BOS like the peer harness
    const auto r = run("-m '" + model + "' --format ids 'Once upon a time, there was a little girl named Lily.'");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(nlohmann::json::parse(r.out).get<std::vector<int>>(), want);
    const auto nobos = run("-m '" + model + "' --no-bos --format ids 'Once upon a time, there was a little girl named Lily.'");
    EXPECT_EQ(nlohmann::json::parse(nobos.out).get<std::vector<int>>(), c.at("ids").get<std::vector<int>>());
    return;
  }
  FAIL() << "case not in peer data";
}

TEST(TokenizeCli, ErrorsAreOneLineWithExitCodes) {
  auto r = run("'hello'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("ridge: error: ", 0), 0u) << r.out;
  r = run("-m /nonexistent/x.gguf hello");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("ridge: error: ", 0), 0u) << r.out;
}

}  // namespace
}  // namespace ridge::tokenizer
