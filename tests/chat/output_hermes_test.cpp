// Hand-written cases of the <tool_call> families (Hermes JSON and Qwen XML bodies), <think>
// reasoning and the hold-back rules. Every case also checks the streaming invariant.
#include <gtest/gtest.h>

#include "chat/output_test_util.h"

namespace ridge::chat {
namespace {

using nlohmann::json;
using testing::check_streaming;
using testing::expect_args;

ParserOptions hermes(bool think = false) {
  ParserOptions o;
  o.format = {OutputFormat::kHermes, think};
  return o;
}

std::string call_text(std::string_view name, std::string_view args) {
  return "<tool_call>\n{\"name\": \"" + std::string(name) + "\", \"arguments\": " +
         std::string(args) + "}\n</tool_call>";
}

TEST(OutputHermes, SeveralCallsWithTextBeforeAndAfter) {
  const std::string text = "Let me check.\n" + call_text("a", R"({"x": 1})") + "\n" +
                           call_text("b", R"({"y": [true, null]})") + "\nDone.";
  const ParsedOutput r = check_streaming(text, hermes());
  EXPECT_EQ(r.content, "Let me check.\nDone.");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "a");
  expect_args(r.tool_calls[0].arguments, json{{"x", 1}});
  EXPECT_EQ(r.tool_calls[1].name, "b");
  expect_args(r.tool_calls[1].arguments, json{{"y", json::array({true, nullptr})}});
  EXPECT_NE(r.tool_calls[0].id, r.tool_calls[1].id);
}

TEST(OutputHermes, TrickyArguments) {
  const std::string args =
      R"({"q": "a \"quoted\" </tool_call> {not json} ü ✓ 😀 \\ \n",)"
      R"( "n": {"deep": {"er": [1, {"z": -2.5e3}]}}})";
  const ParsedOutput r = check_streaming(call_text("search", args), hermes());
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_args(r.tool_calls[0].arguments, json::parse(args));
}

TEST(OutputHermes, ArgumentsAsJsonString) {
  const ParsedOutput r =
      check_streaming(call_text("f", R"("{\"a\": \"b\"}")"), hermes());
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_args(r.tool_calls[0].arguments, json{{"a", "b"}});
}

TEST(OutputHermes, MalformedJsonStaysContent) {
  // Malformed before the call is committed (the arguments' first token is not valid).
  const std::string bad =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {,\"a\": 1}}\n</tool_call>";
  const ParsedOutput r = check_streaming("Hi\n" + bad, hermes());
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "Hi\n" + bad);
  // Not JSON at all, no name, arguments that are not an object.
  for (const std::string body : {"hello", R"({"arguments": {}})",
                                 R"({"name": "f", "arguments": 5})",
                                 R"({"name": 3, "arguments": {}})"}) {
    const std::string t = "<tool_call>\n" + body + "\n</tool_call>";
    const ParsedOutput r2 = check_streaming(t, hermes());
    EXPECT_TRUE(r2.tool_calls.empty()) << t;
    EXPECT_EQ(r2.content, t);
  }
}

TEST(OutputHermes, ProseNamingTheTagIsNotHeldBack) {
  OutputParser p(hermes());
  EXPECT_EQ(p.push("Wrap calls in <tool_call> tags").content, "Wrap calls in <tool_call> tags");
  EXPECT_EQ(check_streaming("a <tool_call> b </tool_call> c", hermes()).content,
            "a <tool_call> b </tool_call> c");
}

TEST(OutputHermes, MissingArgumentsAreEmptyObject) {
  const ParsedOutput r =
      check_streaming("<tool_call>\n{\"name\": \"now\"}\n</tool_call>", hermes());
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{}");
}

TEST(OutputHermes, UnfinishedCallBecomesContent) {
  // Cut before the arguments begin: nothing of the call was sent (output_streaming_test.cpp has
  // calls cut after their name).
  const std::string text = "Sure\n<tool_call>\n{\"name\": \"f\", \"arguments\": ";
  const ParsedOutput r = check_streaming(text, hermes());
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, text);
  // A never-closed block holds its text back while streaming, then finish() flushes it.
  OutputParser p(hermes());
  EXPECT_EQ(p.push("Sure\n<tool_call>\n{\"name\"").content, "Sure");
  EXPECT_TRUE(p.push(": \"f\", \"arguments\": {").empty());
  EXPECT_EQ(p.finish().content, "\n<tool_call>\n{\"name\": \"f\", \"arguments\": {");
}

TEST(OutputHermes, CompleteJsonWithoutCloseTagIsACall) {
  const ParsedOutput r =
      check_streaming("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}", hermes());
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_args(r.tool_calls[0].arguments, json{{"a", 1}});
  const ParsedOutput r2 =
      check_streaming("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_", hermes());
  EXPECT_EQ(r2.tool_calls.size(), 1u);
  EXPECT_EQ(r2.content, "");
}

TEST(OutputHermes, MarkerPrefixHeldBackThenFlushed) {
  OutputParser p(hermes());
  EXPECT_EQ(p.push("Hello <tool").content, "Hello");
  EXPECT_EQ(p.push("_ca").content, "");
  EXPECT_EQ(p.finish().content, " <tool_ca");
  EXPECT_EQ(p.result().content, "Hello <tool_ca");
  // A prefix that stops matching is released at once.
  OutputParser q(hermes());
  EXPECT_EQ(q.push("a <to").content, "a");
  EXPECT_EQ(q.push("y> b").content, " <toy> b");
}

TEST(OutputHermes, ToolsOffKeepsCallTextAsContent) {
  ParserOptions o = hermes();
  o.parse_tools = false;
  const std::string text = "x\n" + call_text("f", "{}");
  const ParsedOutput r = check_streaming(text, o);
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, text);
}

TEST(OutputHermes, EndOfTurnMarkerEndsTheMessage) {
  const ParsedOutput r = check_streaming("Hi there<|im_end|>\n<|im_start|>user\nmore", hermes());
  EXPECT_EQ(r.content, "Hi there");
  const ParsedOutput r2 = check_streaming("Hi <|im_e", hermes());
  EXPECT_EQ(r2.content, "Hi <|im_e");
}

TEST(OutputHermes, UnfinishedCallEndsAtEndOfTurn) {
  const ParsedOutput r = check_streaming("A\n<tool_call>\nnot json<|im_end|>more", hermes());
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "A\n<tool_call>\nnot json");
  ParserOptions o;
  o.format = {OutputFormat::kDeepSeekR1, false};
  const ParsedOutput r2 = check_streaming(
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n{}\n```"
      "<｜tool▁call▁end｜><｜end▁of▁sentence｜>",
      o);
  EXPECT_EQ(r2.tool_calls.size(), 1u);
  EXPECT_EQ(r2.content, "");
}

TEST(OutputHermes, NeverClosedBlockIsLinear) {
  // 300 kB of never-closed call, fed one byte at a time: streamed arguments (the call was
  // committed), a name that never closes (held back, then content), a long run of whitespace.
  const std::string big(300000, 'x');
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"" + big;
  OutputParser p(hermes());
  for (char c : text) p.push(std::string_view(&c, 1));
  p.finish();
  EXPECT_EQ(p.result().content, "");
  ASSERT_EQ(p.result().tool_calls.size(), 1u);
  EXPECT_EQ(p.result().tool_calls[0].arguments, "{\"a\":\"" + big + "\"}");
  const std::string unnamed = "<tool_call>\n{\"name\": \"" + big;
  OutputParser r(hermes());
  for (char c : unnamed) r.push(std::string_view(&c, 1));
  r.finish();
  EXPECT_EQ(r.result().content, unnamed);
  OutputParser q(hermes());
  for (int i = 0; i < 300000; ++i) q.push("\n");
  q.push("x");
  q.finish();
  EXPECT_EQ(q.result().content.size(), 300001u);
}

TEST(OutputHermes, DeeplyNestedArgumentsAreCutAtTheLimit) {
  // Nesting deeper than 256 levels is malformed; the call was committed, so it keeps what was
  // sent, closed, and the rest of the block is dropped.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string text = call_text("f", "{\"a\": " + deep + "}") + "\nafter";
  const ParsedOutput r = check_streaming(text, hermes(), 1);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments,
            "{\"a\":" + std::string(255, '[') + std::string(255, ']') + "}");
  EXPECT_EQ(r.content, "after");
  const std::string ok = std::string(200, '[') + std::string(200, ']');
  EXPECT_EQ(check_streaming(call_text("f", "{\"a\": " + ok + "}"), hermes(), 1).tool_calls.size(),
            1u);
}

TEST(OutputReasoning, ThinkThenContentAndCall) {
  const std::string text = "<think>\nStep 1.\nStep 2.\n</think>\n\nAnswer.\n" +
                           call_text("f", R"({"a": "b"})");
  const ParsedOutput r = check_streaming(text, hermes(true));
  EXPECT_EQ(r.reasoning_content, "Step 1.\nStep 2.");
  EXPECT_EQ(r.content, "Answer.");
  EXPECT_EQ(r.tool_calls.size(), 1u);
}

TEST(OutputReasoning, ToolCallInsideReasoningIsReasoning) {
  const std::string text = "<think>maybe " + call_text("f", "{}") + "</think>ok";
  const ParsedOutput r = check_streaming(text, hermes(true));
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.reasoning_content, "maybe " + call_text("f", "{}"));
  EXPECT_EQ(r.content, "ok");
}

TEST(OutputReasoning, StartsInReasoning) {
  ParserOptions o = hermes(true);
  o.starts_in_reasoning = true;
  const ParsedOutput r = check_streaming("I think.\n</think>\n\nDone", o);
  EXPECT_EQ(r.reasoning_content, "I think.");
  EXPECT_EQ(r.content, "Done");
}

TEST(OutputReasoning, TruncatedReasoningIsAllReasoning) {
  // As llama.cpp: a reasoning block that never closes is reasoning, nothing is content.
  const ParsedOutput r =
      check_streaming("<think>\nStill thinking about <tool_call> and", hermes(true));
  EXPECT_EQ(r.reasoning_content, "Still thinking about <tool_call> and");
  EXPECT_EQ(r.content, "");
  ParserOptions o = hermes(true);
  o.starts_in_reasoning = true;
  const ParsedOutput r2 = check_streaming("half a thought </thi", o);
  EXPECT_EQ(r2.reasoning_content, "half a thought </thi");
  EXPECT_EQ(r2.content, "");
}

TEST(OutputReasoning, NotSeparated) {
  ParserOptions o = hermes(true);
  o.separate_reasoning = false;
  const std::string text = "<think>\nR\n</think>\n\nC";
  const ParsedOutput r = check_streaming(text + "<|im_end|>", o);
  EXPECT_EQ(r.reasoning_content, "");
  EXPECT_EQ(r.content, text);
  o.starts_in_reasoning = true;  // the open tag was in the prompt: it is restored
  const ParsedOutput r2 = check_streaming("R\n</think>\n\nC", o);
  EXPECT_EQ(r2.content, "<think>R\n</think>\n\nC");
  // Calls after the reasoning are still calls.
  const ParsedOutput r3 = check_streaming("R</think>\n" + call_text("f", "{}"), o);
  EXPECT_EQ(r3.content, "<think>R</think>");
  EXPECT_EQ(r3.tool_calls.size(), 1u);
}

TEST(OutputReasoning, ThinkTagLaterInContentIsContent) {
  const ParsedOutput r =
      check_streaming("Use <think> tags like <think>this</think>.", hermes(true));
  EXPECT_EQ(r.content, "Use <think> tags like <think>this</think>.");
  EXPECT_EQ(r.reasoning_content, "");
}

TEST(OutputReasoning, NoThinkTagsForTheFamily) {
  const ParsedOutput r = check_streaming("<think>x</think>y", hermes(false));
  EXPECT_EQ(r.content, "<think>x</think>y");
}

TEST(OutputReasoning, OpenTagPrefixHeldAtStart) {
  OutputParser p(hermes(true));
  EXPECT_TRUE(p.push("\n<th").empty());
  EXPECT_EQ(p.push("ink>abc").reasoning_content, "abc");
  OutputParser q(hermes(true));
  EXPECT_TRUE(q.push("<th").empty());
  EXPECT_EQ(q.finish().content, "<th");
}

// Qwen3-Coder / Qwen3.5 XML calls.
ParserOptions xml() {
  ParserOptions o;
  o.format = {OutputFormat::kQwenXml, false};
  o.tools = json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {
      "type": "object", "properties": {"s": {"type": "string"}, "i": {"type": "integer"},
      "n": {"type": ["number", "null"]}, "b": {"type": "boolean"}, "o": {"type": "object"},
      "a": {"type": "array"}}}}}])");
  return o;
}

TEST(OutputXml, ValuesConvertedBySchema) {
  const std::string text =
      "Calling.\n\n<tool_call>\n<function=f>\n<parameter=s>\n42\n</parameter>\n"
      "<parameter=i>\n7\n</parameter>\n<parameter=n>\n-1.5\n</parameter>\n"
      "<parameter=b>\nFalse\n</parameter>\n<parameter=o>\n{\"k\": [1]}\n</parameter>\n"
      "<parameter=a>\n[\"x\"]\n</parameter>\n<parameter=other>\ntrue\n</parameter>\n"
      "</function>\n</tool_call>";
  const ParsedOutput r = check_streaming(text, xml());
  EXPECT_EQ(r.content, "Calling.");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_args(r.tool_calls[0].arguments,
              json{{"s", "42"}, {"i", 7}, {"n", -1.5}, {"b", false},
                   {"o", {{"k", {1}}}}, {"a", {"x"}}, {"other", "true"}});
}

TEST(OutputXml, MultilineValueAndBadNumber) {
  const std::string text =
      "<tool_call>\n<function=f>\n<parameter=s>\n  line 1\n\nline \"3\" </tool_call> "
      "<parameter=x>\n"
      "</parameter>\n<parameter=i>\nseven\n</parameter>\n</function>\n</tool_call>";
  const ParsedOutput r = check_streaming(text, xml());
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_args(r.tool_calls[0].arguments,
              json{{"s", "  line 1\n\nline \"3\" </tool_call> <parameter=x>"}, {"i", "seven"}});
}

TEST(OutputXml, MissingParameterCloseAndNoParameters) {
  const std::string text = "<tool_call>\n<function=f>\n<parameter=i>\n3\n<parameter=s>\nv\n"
                           "</function>\n</tool_call>\n<tool_call>\n<function=g>\n</function>\n"
                           "</tool_call>";
  const ParsedOutput r = check_streaming(text, xml());
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_args(r.tool_calls[0].arguments, json{{"i", 3}, {"s", "v"}});
  EXPECT_EQ(r.tool_calls[1].name, "g");
  EXPECT_EQ(r.tool_calls[1].arguments, "{}");
}

TEST(OutputXml, MalformedOrUnfinishedStaysContent) {
  for (const std::string t : {"<tool_call>\nnot a call\n</tool_call>",
                              "<tool_call>\n<function=\n>\n</function>\n</tool_call>",
                              "<tool_call>\n<function=f"}) {
    const ParsedOutput r = check_streaming(t, xml());
    EXPECT_TRUE(r.tool_calls.empty()) << t;
    EXPECT_EQ(r.content, t);
  }
  // After <function=NAME> the call is committed: it keeps the parameters that were complete.
  const ParsedOutput r =
      check_streaming("<tool_call>\n<function=f>\n<parameter=i>\n3\n</parameter>\n</tool_call>",
                      xml());
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, "{\"i\":3}");
  EXPECT_EQ(r.content, "");
  const ParsedOutput r2 =
      check_streaming("<tool_call>\n<function=f>\n<parameter=i>\n3", xml());
  ASSERT_EQ(r2.tool_calls.size(), 1u);
  EXPECT_EQ(r2.tool_calls[0].arguments, "{}");
}

TEST(OutputXml, JsonBodyAcceptedToo) {
  const ParsedOutput r = check_streaming(call_text("f", R"({"i": 1})"), xml());
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_args(r.tool_calls[0].arguments, json{{"i", 1}});
  // And the Hermes family accepts XML bodies (Qwen3 models sometimes write them).
  const ParsedOutput r2 = check_streaming(
      "<tool_call>\n<function=f>\n<parameter=i>\n1\n</parameter>\n</function>\n</tool_call>",
      hermes());
  ASSERT_EQ(r2.tool_calls.size(), 1u);
  expect_args(r2.tool_calls[0].arguments, json{{"i", "1"}});  // no schema: a string
}

}  // namespace
}  // namespace ridge::chat
