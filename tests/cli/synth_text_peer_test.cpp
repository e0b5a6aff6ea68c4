// A random-weight model made with the built-in vocabulary prints visible words, and they are the
// words llama.cpp prints for the same greedy continuation of the same file (the peer harness of
// ../shared/peer, named by RIDGE_PEER as scripts/test.sh exports it; skipped otherwise).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "run_binary.h"

namespace {

std::string stdout_of(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(SynthTextPeer, RandomWeightsPrintTheWordsLlamaCppPrints) {
  const char* peer = std::getenv("RIDGE_PEER");
  if (peer == nullptr || !std::filesystem::exists(peer)) GTEST_SKIP() << "RIDGE_PEER not set (scripts/test.sh sets it)";
  const std::string model =
      (std::filesystem::temp_directory_path() / ("ridge_synth_text_" + std::to_string(::getpid()) + ".gguf")).string();
  for (const char* preset : {"tiny-qwen3", "tiny-llama"}) {
    SCOPED_TRACE(preset);
    const auto made = ridge::testing::run_ridge(std::string("synth --preset ") + preset + " --type f32 -o " + model);
    ASSERT_EQ(made.rc, 0) << made.text;
    const std::string ours = stdout_of(std::string(RIDGE_BINARY) + " run -m " + model +
                                       " -p 'The bandwidth wall' -n 24 --temp 0 -t 1 2>/dev/null");
    const std::string theirs = stdout_of("node " + std::string(peer) + " greedy --model " + model +
                                         " --prompt 'The bandwidth wall' -n 24 2>/dev/null");
    const nlohmann::json j = nlohmann::json::parse(theirs);
    const std::string text = j.at("text").get<std::string>();
    EXPECT_NE(text.find_first_of("abcdefghijklmnopqrstuvwxyz"), std::string::npos) << text;
    // ridge streams the text and ends the line.
    EXPECT_EQ(ours, text + "\n");
  }
  std::filesystem::remove(model);
}

}  // namespace
