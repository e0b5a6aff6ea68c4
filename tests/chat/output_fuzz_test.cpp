// Random texts made of the families' markers, pieces of markers, JSON and text: whatever the
// format and options, streaming in any pieces gives parse_output's result, the argument
// fragments add up to the arguments, arguments are JSON objects, and nothing crashes.
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
    // Pieces of calls whose name is sent before they end (cut or malformed afterwards).
    "{\"name\": \"f\", \"arguments\": {\"k\": [1, \"", "{\"name\": \"f\", \"arguments\": {",
    "\"k\": ", "\\u00e9", "\\ud83d", "\\ude00", "-0.5e+3", "01", "null", "tru", "\xff", "\xc3",
    "\t", "<function=f>\n<parameter=k>\n", "call:f{k:", "[TOOL_CALLS]f[ARGS]{\"k\": ",
    "<|message|>{\"k\": ", "function<｜tool▁sep｜>f\n```json\n{\"k\": \"",
    "{\"name\": \"get_weather\", \"parameters\": {\"city\": ", "import os",
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

// Random JSON text with random whitespace (an object when depth == 0).
std::string random_json(std::mt19937& rng, int depth) {
  static const char* const kWs[] = {"", "", " ", "\n  ", "\t"};
  static const char* const kStr[] = {"a", "\\\"", "\\\\", "\\n", "\\u00e9", "\\ud83d\\ude00", "ü",
                                     "😀", " ", "</tool_call>", "}", "[", ",", ":"};
  static const char* const kNum[] = {"0", "-1", "12.5", "1e3", "-0.25E-2", "12345678901234567890"};
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  auto ws = [&] { return std::string(kWs[pick(5)]); };
  auto str = [&] {
    std::string t = "\"";
    for (int i = pick(4); i > 0; --i) t += kStr[pick(static_cast<int>(std::size(kStr)))];
    return t + "\"";
  };
  const int kind = depth == 0 ? 0 : depth >= 3 ? 2 + pick(3) : pick(5);
  std::string t;
  if (kind == 0 || kind == 1) {
    t = kind == 0 ? "{" : "[";
    const int n = pick(4);
    for (int i = 0; i < n; ++i) {
      if (i > 0) t += ws() + ",";
      t += ws();
      if (kind == 0) t += str() + ws() + ":" + ws();
      t += random_json(rng, depth + 1) + ws();
    }
    t += kind == 0 ? "}" : "]";
  } else if (kind == 2) {
    t = str();
  } else if (kind == 3) {
    t = kNum[pick(static_cast<int>(std::size(kNum)))];
  } else {
    t = pick(3) == 0 ? "true" : pick(2) == 0 ? "false" : "null";
  }
  return t;
}

TEST(OutputFuzz, StreamedArgumentsAreTheJsonAndEveryCutIsValid) {
  std::mt19937 rng(4242);
  ParserOptions o;
  o.format = {OutputFormat::kHermes, false};
  for (int n = 0; n < 60; ++n) {
    const std::string args = random_json(rng, 0);
    const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": " + args +
                             "}\n</tool_call>";
    SCOPED_TRACE(text);
    const ParsedOutput r = testing::check_streaming(text, o, 2);
    ASSERT_EQ(r.tool_calls.size(), 1u);
    testing::expect_args(r.tool_calls[0].arguments, nlohmann::json::parse(args));
    // Cut anywhere after the name: the arguments sent so far, closed, are a JSON object.
    for (size_t cut : testing::utf8_boundaries(text)) {
      if (cut % 3 == 0) testing::check_streaming(std::string_view(text).substr(0, cut), o, 0);
    }
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace ridge::chat
