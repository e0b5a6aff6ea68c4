// The chat-template flags of `ridge chat`, `ridge serve` and `ridge batch`: bad values are
// one-line usage errors, and `ridge batch` renders "messages" lines with the chosen template.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "run_binary.h"
#include "test_files.h"

namespace {

using ridge::testing::kStories;
using ridge::testing::temp_file;

using ridge::testing::run_ridge;

const std::string kQwen3 = std::string(RIDGE_SHARED_DIR) + "/templates/Qwen-Qwen3-0.6B.jinja";


TEST(ChatTemplateFlags, BadValuesAreUsageErrors) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  auto missing = run_ridge("chat -m " + kStories + " --chat-template-file /nonexistent.jinja");
  EXPECT_EQ(missing.rc, 2) << missing.text;
  EXPECT_NE(missing.text.find("cannot open"), std::string::npos) << missing.text;
  const std::string unsupported = temp_file("ridge_tmpl_", "{{ bos_token }}\n{% extends 'x' %}\n");
  auto bad = run_ridge("chat -m " + kStories + " --chat-template-file " + unsupported);
  EXPECT_EQ(bad.rc, 2) << bad.text;
  EXPECT_NE(bad.text.find("line 2"), std::string::npos) << bad.text;
  EXPECT_NE(bad.text.find("extends"), std::string::npos) << bad.text;
  auto both = run_ridge("chat -m " + kStories + " --chat-template chatml --chat-template-file " +
                        unsupported);
  EXPECT_EQ(both.rc, 2) << both.text;
  auto kwargs = run_ridge("chat -m " + kStories + " --chat-template-kwargs '[1]'");
  EXPECT_EQ(kwargs.rc, 2) << kwargs.text;
  EXPECT_NE(kwargs.text.find("JSON object"), std::string::npos) << kwargs.text;
  auto pooling = run_ridge("serve -m " + kStories + " --port 0 --pooling last");
  EXPECT_EQ(pooling.rc, 2) << pooling.text;
  EXPECT_NE(pooling.text.find("--embeddings"), std::string::npos) << pooling.text;
  auto not_embedding = run_ridge("serve -m " + kStories + " --port 0 --embeddings");
  EXPECT_EQ(not_embedding.rc, 2) << not_embedding.text;
  EXPECT_NE(not_embedding.text.find("pooling_type"), std::string::npos) << not_embedding.text;
  const std::string bad_lines = temp_file("ridge_batch_bad_", "{\"messages\": \"hi\"}\n");
  auto bad_batch = run_ridge("batch -q -m " + kStories + " --prompts " + bad_lines);
  EXPECT_EQ(bad_batch.rc, 2) << bad_batch.text;
  EXPECT_NE(bad_batch.text.find("'messages' must be a non-empty array"), std::string::npos)
      << bad_batch.text;
  std::filesystem::remove(bad_lines);
  std::filesystem::remove(unsupported);
}

TEST(ChatTemplateFlags, BatchRendersMessagesWithTheTemplate) {
  if (!std::filesystem::exists(kStories) || !std::filesystem::exists(kQwen3)) {
    GTEST_SKIP() << "../shared models or templates not found";
  }
  const std::string prompts = temp_file(
      "ridge_batch_chat_",
      "{\"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": 6, "
      "\"temperature\": 0}\n"
      "{\"prompt\": \"<|im_start|>user\\nHello<|im_end|>\\n<|im_start|>assistant\\n\", "
      "\"max_tokens\": 6, \"temperature\": 0}\n");
  const std::string out = prompts + ".out";
  auto r = run_ridge("batch -q -m " + kStories + " --prompts " + prompts + " --out " + out +
                     " --chat-template-file " + kQwen3);
  ASSERT_EQ(r.rc, 0) << r.text;
  std::ifstream in(out);
  std::string l1, l2;
  ASSERT_TRUE(std::getline(in, l1) && std::getline(in, l2));
  const auto chat = nlohmann::json::parse(l1), raw = nlohmann::json::parse(l2);
  // Qwen3's template renders exactly the text of the raw prompt (no system turn, no tools), so
  // both requests see the same tokens and answer the same; the chat one is split into content.
  EXPECT_EQ(chat["prompt_tokens"], raw["prompt_tokens"]);
  EXPECT_EQ(chat["tokens"], raw["tokens"]);
  EXPECT_EQ(chat["content"], raw["text"]);
  EXPECT_FALSE(raw.contains("content"));
  std::filesystem::remove(prompts);
  std::filesystem::remove(out);
}

}  // namespace
