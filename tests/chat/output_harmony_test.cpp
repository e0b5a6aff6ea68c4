// Hand-written cases of gpt-oss Harmony output. Every case also checks the streaming invariant.
#include <gtest/gtest.h>

#include "chat/output_test_util.h"

namespace ridge::chat {
namespace {

using nlohmann::json;
using testing::check_streaming;
using testing::expect_args;

ParserOptions harmony() {
  ParserOptions o;
  o.format = {OutputFormat::kHarmony, false};
  return o;
}

TEST(OutputHarmony, AnalysisThenFinal) {
  const ParsedOutput r = check_streaming(
      "<|channel|>analysis<|message|>Think ✓.<|end|><|start|>assistant<|channel|>final"
      "<|message|>Answer <b>x</b>.<|return|>",
      harmony());
  EXPECT_EQ(r.reasoning_content, "Think ✓.");
  EXPECT_EQ(r.content, "Answer <b>x</b>.");
}

TEST(OutputHarmony, ToolCallsBothHeaderForms) {
  const std::string text =
      "<|channel|>analysis<|message|>Need tools.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"<b> Paris\"}<|call|>"
      "<|start|>assistant to=functions.search<|channel|>commentary json<|message|>{\"q\": 1}"
      "<|call|>";
  const ParsedOutput r = check_streaming(text, harmony());
  EXPECT_EQ(r.reasoning_content, "Need tools.");
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[1].name, "search");
  expect_args(r.tool_calls[1].arguments, json{{"q", 1}});
}

TEST(OutputHarmony, PreambleIsContentAndBadArgumentsToo) {
  const ParsedOutput r = check_streaming(
      "<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>"
      "commentary to=functions.f <|constrain|>json<|message|>{oops<|call|>",
      harmony());
  EXPECT_EQ(r.content, "Let me check.{oops");
  EXPECT_TRUE(r.tool_calls.empty());
}

TEST(OutputHarmony, TruncatedAnalysisIsReasoning) {
  const ParsedOutput r = check_streaming("<|channel|>analysis<|message|>Half a thou", harmony());
  EXPECT_EQ(r.reasoning_content, "Half a thou");
  EXPECT_EQ(r.content, "");
  // A call cut before its arguments began is content.
  const ParsedOutput r2 =
      check_streaming(" to=functions.f<|channel|>commentary json<|message|> {", harmony());
  EXPECT_TRUE(r2.tool_calls.empty());
  EXPECT_EQ(r2.content, " {");
}

TEST(OutputHarmony, PlainTextIsContent) {
  const ParsedOutput r = check_streaming("Just text <|chan", harmony());
  EXPECT_EQ(r.content, "Just text <|chan");
}

TEST(OutputHarmony, OptionsOff) {
  ParserOptions o = harmony();
  o.parse_tools = false;
  o.separate_reasoning = false;
  const ParsedOutput r = check_streaming(
      "<|channel|>analysis<|message|>R<|end|><|start|>assistant to=functions.f<|channel|>"
      "commentary json<|message|>{}<|call|>",
      o);
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.reasoning_content, "");
  EXPECT_EQ(r.content, "<|channel|>analysis<|message|>R<|end|>{}");
}

TEST(OutputHarmony, StartsInAnalysis) {
  ParserOptions o = harmony();
  o.starts_in_reasoning = true;
  const ParsedOutput r = check_streaming(
      "R<|end|><|start|>assistant<|channel|>final<|message|>C", o);
  EXPECT_EQ(r.reasoning_content, "R");
  EXPECT_EQ(r.content, "C");
}

}  // namespace
}  // namespace ridge::chat
