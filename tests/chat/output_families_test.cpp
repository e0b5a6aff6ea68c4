// Hand-written cases of Llama 3, Mistral, DeepSeek-R1, Gemma 4 and content-only families, and
// the family detection. Every case also checks the streaming invariant.
#include <gtest/gtest.h>

#include "chat/output_test_util.h"

namespace ridge::chat {
namespace {

using nlohmann::json;
using testing::check_streaming;
using testing::expect_args;

ParserOptions fmt(OutputFormat f, bool think = false) {
  ParserOptions o;
  o.format = {f, think};
  return o;
}

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");

TEST(OutputLlama3, JsonCallAtStart) {
  ParserOptions o = fmt(OutputFormat::kLlama3Json);
  o.tools = kTools;
  const ParsedOutput r = check_streaming(
      "\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Zürich \\\"Z\\\"\"}}"
      "<|eot_id|>",
      o);
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  expect_args(r.tool_calls[0].arguments, json{{"city", "Zürich \"Z\""}});
  // "arguments" and the {"type": "function", ...} spelling are accepted too.
  const ParsedOutput r2 = check_streaming(
      R"({"type": "function", "name": "get_weather", "arguments": {"city": "x"}})", o);
  EXPECT_EQ(r2.tool_calls.size(), 1u);
}

TEST(OutputLlama3, SeveralCallsInARow) {
  ParserOptions o = fmt(OutputFormat::kLlama3Json);
  const ParsedOutput r = check_streaming(
      "{\"name\": \"a\", \"parameters\": {}}\n{\"name\": \"b\", \"parameters\": {\"x\": 1}}", o);
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[1].name, "b");
  // A leading '{' holds everything back until the JSON closes.
  OutputParser p(o);
  EXPECT_TRUE(p.push("{\"answer\": ").empty());
  EXPECT_TRUE(p.push("42").empty());
  EXPECT_EQ(p.push("} ok").content, "{\"answer\": 42} ok");
}

TEST(OutputLlama3, JsonAnswersStayContent) {
  ParserOptions o = fmt(OutputFormat::kLlama3Json);
  o.tools = kTools;
  for (const std::string t : {R"({"result": 5})", R"({"name": "other_tool", "parameters": {}})",
                              R"({"name": "get_weather", "type": "x", "parameters": {}})",
                              R"({"name": "get_weather", "parameters": )",
                              "The JSON is {\"name\": \"get_weather\", \"parameters\": {}}"}) {
    const ParsedOutput r = check_streaming(t, o);
    EXPECT_TRUE(r.tool_calls.empty()) << t;
    EXPECT_EQ(r.content, t);
  }
}

TEST(OutputLlama3, PythonTagBuiltinAndCode) {
  ParserOptions o = fmt(OutputFormat::kLlama3Json);
  const ParsedOutput r =
      check_streaming("<|python_tag|>brave_search.call(query=\"a, b\", n=3)<|eom_id|>", o);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "brave_search");
  expect_args(r.tool_calls[0].arguments, json{{"query", "a, b"}, {"n", 3}});
  const ParsedOutput r2 = check_streaming("<|python_tag|>print(1 + 1)", o);
  ASSERT_EQ(r2.tool_calls.size(), 1u);
  EXPECT_EQ(r2.tool_calls[0].name, "python");
  expect_args(r2.tool_calls[0].arguments, json{{"code", "print(1 + 1)"}});
  const ParsedOutput r3 = check_streaming(
      "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"x\"}}<|eom_id|>", o);
  ASSERT_EQ(r3.tool_calls.size(), 1u);
  EXPECT_EQ(r3.tool_calls[0].name, "get_weather");
}

TEST(OutputMistral, NemoArrayKeepsIds) {
  const std::string text =
      "[TOOL_CALLS][{\"id\": \"abcdefghi\", \"name\": \"a\", \"arguments\": {\"x\": \"]}\"}}, "
      "{\"name\": \"b\", \"arguments\": \"{\\\"y\\\": 2}\"}, "
      "{\"name\": \"c\", \"arguments\": {}, \"id\": \"123456789\"}]</s>";
  const ParsedOutput r = check_streaming(text, fmt(OutputFormat::kMistralNemo));
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.tool_calls.size(), 3u);
  EXPECT_EQ(r.tool_calls[0].id, "abcdefghi");
  expect_args(r.tool_calls[0].arguments, json{{"x", "]}"}});
  // No id written: a 9-character alphanumeric one, as the Mistral templates require.
  EXPECT_EQ(r.tool_calls[1].id.size(), 9u);
  expect_args(r.tool_calls[1].arguments, json{{"y", 2}});
  // An id written after the arguments comes after the call's first delta: a new one is used.
  EXPECT_EQ(r.tool_calls[2].id.size(), 9u);
  EXPECT_NE(r.tool_calls[2].id, "123456789");
}

TEST(OutputMistral, SmallFormWithAndWithoutCallId) {
  const std::string text = "Checking.[TOOL_CALLS]a[ARGS]{\"x\": 1}[TOOL_CALLS]b[CALL_ID]123456789"
                           "[ARGS]{}</s>";
  const ParsedOutput r = check_streaming(text, fmt(OutputFormat::kMistralSmall));
  EXPECT_EQ(r.content, "Checking.");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "a");
  EXPECT_EQ(r.tool_calls[0].id.size(), 9u);
  EXPECT_EQ(r.tool_calls[1].name, "b");
  EXPECT_EQ(r.tool_calls[1].id, "123456789");
}

TEST(OutputMistral, MalformedStaysContent) {
  const std::vector<std::string> bad = {"[TOOL_CALLS][{\"name\": \"a\", \"arguments\": 1},]",
                                       "[TOOL_CALLS]a[ARGS]not json", "[TOOL_CALLS]a[ARGS]{",
                                       "[TOOL_CALLS][]", "[TOOL_CALLS]a{[ARGS]{}",
                                       "[TOOL_CALLS]" + std::string(300, 'n')};
  for (const std::string& t : bad) {
    const ParsedOutput r = check_streaming(t, fmt(OutputFormat::kMistralSmall));
    EXPECT_TRUE(r.tool_calls.empty()) << t;
    EXPECT_EQ(r.content, t);
  }
}

TEST(OutputDeepSeek, ReasoningAndTwoCalls) {
  ParserOptions o = fmt(OutputFormat::kDeepSeekR1, true);
  o.starts_in_reasoning = true;
  const std::string text =
      "Hmm.\n</think>\n\nLet me look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n"
      "```json\n{\"x\": \"```\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>b\n"
      "```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>";
  const ParsedOutput r = check_streaming(text, o);
  EXPECT_EQ(r.reasoning_content, "Hmm.");
  EXPECT_EQ(r.content, "Let me look.");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_args(r.tool_calls[0].arguments, json{{"x", "```"}});
  EXPECT_EQ(r.tool_calls[1].name, "b");
}

TEST(OutputDeepSeek, CutCallsStayContent) {
  ParserOptions o = fmt(OutputFormat::kDeepSeekR1, true);
  // Cut before the arguments begin (output_streaming_test.cpp has calls cut after).
  const std::string text =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n{";
  const ParsedOutput r = check_streaming(text, o);
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, text);
  // Complete calls without the final end marker are calls.
  const ParsedOutput r2 = check_streaming(
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n{}\n```"
      "<｜tool▁call▁end｜>", o);
  EXPECT_EQ(r2.tool_calls.size(), 1u);
}

TEST(OutputGemma4, ThoughtCallsAndContent) {
  ParserOptions o = fmt(OutputFormat::kGemma4, true);
  const std::string text =
      "<|channel>thought\nPlan.\n<channel|><|tool_call>call:f{a:<|\"|>x, y: {z}<|\"|>,b:[1,None,"
      "true],c:{d:-2.5,e:<|\"|><tool_call|><|\"|>}}<tool_call|>Here.<|tool_response>";
  const ParsedOutput r = check_streaming(text, o);
  EXPECT_EQ(r.reasoning_content, "Plan.");
  EXPECT_EQ(r.content, "Here.");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].name, "f");
  expect_args(r.tool_calls[0].arguments,
              json{{"a", "x, y: {z}"}, {"b", {1, nullptr, true}},
                   {"c", {{"d", -2.5}, {"e", "<tool_call|>"}}}});
}

TEST(OutputGemma4, MalformedStaysContent) {
  ParserOptions o = fmt(OutputFormat::kGemma4, true);
  for (const std::string t : {"<|tool_call>call:{a:1}<tool_call|>",
                              "<|tool_call>f{a:1}<tool_call|>", "<|tool_call>call:f"}) {
    const ParsedOutput r = check_streaming(t, o);
    EXPECT_TRUE(r.tool_calls.empty()) << t;
    EXPECT_EQ(r.content, t);
  }
}

TEST(OutputContentOnly, EverythingIsContent) {
  ParserOptions o = fmt(OutputFormat::kContentOnly);
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"
                           "<think>x</think> [TOOL_CALLS] ✓\n";
  const ParsedOutput r = check_streaming(text + "<end_of_turn>", o);
  EXPECT_EQ(r.content, text);
  EXPECT_TRUE(r.tool_calls.empty());
  OutputParser p(o);  // no marker can follow: trailing whitespace is not held
  EXPECT_EQ(p.push("a \n").content, "a \n");
}

TEST(OutputDetect, ByMarkers) {
  struct Case {
    const char* src;
    OutputFormat tools;
    bool think;
  };
  const Case cases[] = {
      {"{{'<|im_start|>'}}<tool_call>\n{\"name\"", OutputFormat::kHermes, false},
      {"<think>\n</think><tool_call>", OutputFormat::kHermes, true},
      {"<tool_call>\n<function=x>", OutputFormat::kQwenXml, false},
      {"<|start_header_id|>{\"name\": function name, \"parameters\": ...}",
       OutputFormat::kLlama3Json, false},
      {"[TOOL_CALLS][", OutputFormat::kMistralNemo, false},
      {"[TOOL_CALLS]name[ARGS]", OutputFormat::kMistralSmall, false},
      {"<|start|>assistant<|channel|>final<|message|>", OutputFormat::kHarmony, false},
      {"<｜tool▁calls▁begin｜><think>\n", OutputFormat::kDeepSeekR1, true},
      {"<|tool_call>call:<|channel>thought", OutputFormat::kGemma4, true},
      {"<start_of_turn>model\n", OutputFormat::kContentOnly, false},
      {"", OutputFormat::kContentOnly, false},
  };
  for (const Case& c : cases) {
    const FormatInfo f = detect_output_format(c.src);
    EXPECT_EQ(output_format_name(f.tools), output_format_name(c.tools)) << c.src;
    EXPECT_EQ(f.think_tags, c.think) << c.src;
  }
}

TEST(OutputDetect, PromptEndsInReasoning) {
  const FormatInfo think{OutputFormat::kHermes, true};
  EXPECT_TRUE(prompt_ends_in_reasoning("<|im_start|>assistant\n<think>\n", think));
  EXPECT_FALSE(prompt_ends_in_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", think));
  EXPECT_FALSE(prompt_ends_in_reasoning("<think>\nx", think));
  EXPECT_FALSE(prompt_ends_in_reasoning("<think>\n", FormatInfo{OutputFormat::kHermes, false}));
}

TEST(OutputIds, SeededAndRandom) {
  ParserOptions o = fmt(OutputFormat::kHermes);
  const std::string t = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  o.id_seed = 42;
  const std::string a = parse_output(t, o).tool_calls.at(0).id;
  EXPECT_EQ(a, parse_output(t, o).tool_calls.at(0).id);
  EXPECT_EQ(a.size(), 29u);
  EXPECT_TRUE(a.starts_with("call_"));
  for (char c : a.substr(5)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << a;
  o.id_seed = 0;
  EXPECT_NE(parse_output(t, o).tool_calls.at(0).id, parse_output(t, o).tool_calls.at(0).id);
}

}  // namespace
}  // namespace ridge::chat
