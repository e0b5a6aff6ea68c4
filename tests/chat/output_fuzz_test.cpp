// Random texts made of the families' markers, pieces of markers, JSON and text: whatever the
// format and options, streaming in any pieces gives parse_output's result, arguments are JSON
// objects, and nothing crashes.
#include <gtest/gtest.h>

#include <random>

#include "chat/output_test_util.h"

namespace ridge::chat {
namespace {

const char* const kPieces[] = {
    "<tool_call>", "</tool_call>", "<tool_", "\n", "  ", "{", "}", "[", "]", "\"", "\\", ",", ":",
    "{\"name\": \"f\", \"arguments\": {\"a\": 1}}", "{\"name\": \"g\", \"parameters\": {}}",
    "\"name\"", "\"arguments\"", "<function=f>", "</function>", "<parameter=a>", "</parameter>",
    "<think>", "</think>", "</thi", "<|im_end|>", "<|eot_id|>", "<|python_tag|>", "x.call(a=1)",
    "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "</s>", "<|start|>", "assistant", "<|channel|>",
    "analysis", "final", "commentary", " to=functions.f", "<|constrain|>json", "<|message|>",
    "<|end|>", "<|call|>", "<|return|>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>",
    "function<｜tool▁sep｜>f\n```json\n", "```", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>",
    "<|tool_call>", "call:f", "<tool_call|>", "<|\"|>", "<|channel>thought", "<channel|>",
    "<turn|>", "None", "true", "1.5", "hello", " world", "ü✓日", "😀",
};

TEST(OutputFuzz, RandomMarkerSoupStreamsConsistently) {
  const OutputFormat formats[] = {
      OutputFormat::kContentOnly, OutputFormat::kHermes,      OutputFormat::kQwenXml,
      OutputFormat::kLlama3Json,  OutputFormat::kMistralNemo, OutputFormat::kMistralSmall,
      OutputFormat::kHarmony,     OutputFormat::kDeepSeekR1,  OutputFormat::kGemma4};
  std::mt19937 rng(20261205);
  for (OutputFormat f : formats) {
    for (int variant = 0; variant < 8; ++variant) {
      ParserOptions o;
      o.format = {f, (variant & 1) != 0};
      o.starts_in_reasoning = (variant & 2) != 0;
      o.parse_tools = (variant & 4) == 0 || variant == 5;
      o.separate_reasoning = variant != 7;
      for (int n = 0; n < 40; ++n) {
        std::string text;
        const int len = std::uniform_int_distribution<int>(1, 30)(rng);
        for (int i = 0; i < len; ++i) {
          text += kPieces[std::uniform_int_distribution<size_t>(0, std::size(kPieces) - 1)(rng)];
        }
        SCOPED_TRACE(std::string(output_format_name(f)) + " variant " + std::to_string(variant) +
                     ": " + text);
        testing::check_streaming(text, o, 3);
        if (HasFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace ridge::chat
