// Chat rendering against the published prompt formats (Qwen ChatML, Meta Llama 3, Llama 2
// [INST], as also rendered by llama.cpp's llm_chat_apply_template).
#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/chat_template.h"

namespace ridge::tokenizer {
namespace {

const std::vector<ChatMessage> kChat = {
    {"system", "You are a helpful assistant."}, {"user", "Hello"}, {"assistant", "Hi there"}, {"user", "Who are you"}};

TEST(ChatTemplate, ChatmlFromQwenStyleTemplate) {
  const auto t = ChatTemplate::detect(
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}");
  ASSERT_EQ(t.style(), ChatStyle::kChatml);
  EXPECT_EQ(t.render(kChat, true).text,
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(t.render(std::span(kChat).first(2), false).text,
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n");
}

TEST(ChatTemplate, Llama3) {
  const auto t = ChatTemplate::detect("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}");
  ASSERT_EQ(t.style(), ChatStyle::kLlama3);
  EXPECT_EQ(t.render(kChat, true).text,
            "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, Llama2WithSystemBlock) {
  const auto t = ChatTemplate::detect(
      "{% if messages[0]['role'] == 'system' %}<<SYS>>{% endif %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}");
  ASSERT_EQ(t.style(), ChatStyle::kLlama2);
  EXPECT_EQ(t.render(kChat, true).text,
            "[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello [/INST]Hi there</s>"
            "<s>[INST] Who are you [/INST]");
}

TEST(ChatTemplate, UnknownFallsBackToPlainText) {
  const auto t = ChatTemplate::detect("{% for m in messages %}<start_of_turn>{{ m.content }}{% endfor %}");
  EXPECT_FALSE(t.recognised());
  EXPECT_EQ(t.render(std::span(kChat).subspan(1, 1), true).text, "user: Hello\n\nassistant: ");
  EXPECT_FALSE(ChatTemplate::detect("").recognised());
}

TEST(ChatTemplate, NamesForTheCommandLine) {
  EXPECT_EQ(ChatTemplate::from_name("llama3")->style(), ChatStyle::kLlama3);
  EXPECT_EQ(ChatTemplate::from_name("plain")->style(), ChatStyle::kPlain);
  const auto bad = ChatTemplate::from_name("vicuna");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().is_usage());
}

TEST(ChatTemplate, RenderedPromptTokenizesMarkersAsControlTokens) {
  if (!testing::shared_exists("vocab/ggml-vocab-qwen2.gguf")) GTEST_SKIP() << "no shared vocab";
  auto tok = testing::load_shared("vocab/ggml-vocab-qwen2.gguf");
  ASSERT_TRUE(tok.has_value());
  const MarkedText prompt = ChatTemplate::detect("chatml").render(std::span(kChat).subspan(1, 1), true);
  const auto ids = tok->encode_marked(prompt, true);
  const TokenId start = tok->find_token("<|im_start|>"), end = tok->find_token("<|im_end|>");
  ASSERT_GE(ids.size(), 6u);
  EXPECT_EQ(ids.front(), start);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), start), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), end), 1);
  EXPECT_EQ(tok->decode(ids), prompt.text);
}

}  // namespace
}  // namespace ridge::tokenizer
