// Incremental tool calls, OpenAI style: per family, fed one character at a time, a call's name
// delta comes before its block ends and its arguments come in fragments that add up to the final
// arguments; calls cut or malformed after their name keep what was sent, closed into valid JSON.
#include <gtest/gtest.h>

#include "chat/output_test_util.h"

namespace ridge::chat {
namespace {

using nlohmann::json;
using testing::check_streaming;
using testing::expect_incremental;
using testing::trace_calls;

ParserOptions fmt(OutputFormat f) {
  ParserOptions o;
  o.format = {f, false};
  o.tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "days": {"type": "integer"}, "opts": {"type": "object"}}}}}])");
  return o;
}

const json kArgs = {{"city", "Zürich \"Z\""}, {"days", 3}, {"opts", {{"metric", true},
                                                                   {"list", {1, 2.5, nullptr}}}}};
const std::string kArgsText =
    R"({"city": "Zürich \"Z\"", "days": 3, "opts": {"metric": true, "list": [1, 2.5, null]}})";
const std::string kCompact =
    R"({"city":"Zürich \"Z\"","days":3,"opts":{"metric":true,"list":[1,2.5,null]}})";

size_t at(const std::string& text, std::string_view what) {
  const size_t p = text.find(what);
  EXPECT_NE(p, std::string::npos) << what;
  return p;
}

TEST(OutputStreaming, HermesStreamsCompactArguments) {
  const std::string text = "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " +
                           kArgsText + "}\n</tool_call>";
  // The name comes before the first argument's value; fragments add up to the compact text.
  expect_incremental(text, fmt(OutputFormat::kHermes), 0, at(text, "Zürich"), kArgs, 20);
  const ParsedOutput r = parse_output(text, fmt(OutputFormat::kHermes));
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, kCompact);
  EXPECT_EQ(r.content, "Checking.");
}

TEST(OutputStreaming, NothingIsSentBeforeTheArgumentsBegin) {
  OutputParser p(fmt(OutputFormat::kHermes));
  EXPECT_TRUE(p.push("<tool_call>\n{\"name\": \"get_weather\"").tool_calls.empty());
  EXPECT_TRUE(p.push(", \"arguments\": {").tool_calls.empty());
  const OutputDelta d = p.push("\"ci");
  ASSERT_EQ(d.tool_calls.size(), 2u);  // the first delta names the call, then a fragment
  EXPECT_EQ(d.tool_calls[0].name, "get_weather");
  EXPECT_TRUE(d.tool_calls[0].id.starts_with("call_"));
  EXPECT_EQ(d.tool_calls[0].arguments_fragment, "");
  EXPECT_EQ(d.tool_calls[1].index, 0);
  EXPECT_EQ(d.tool_calls[1].arguments_fragment, "{");  // the key waits for its value
  EXPECT_EQ(p.push("ty\": \"Par").tool_calls.at(0).arguments_fragment, "\"city\":\"Par");
  EXPECT_EQ(p.push("is\", \"days\": 1").tool_calls.at(0).arguments_fragment, "is\"");
  EXPECT_EQ(p.push("2}}").tool_calls.at(0).arguments_fragment, ",\"days\":12}");
  EXPECT_EQ(p.finish().tool_calls.size(), 0u);
  EXPECT_EQ(p.result().tool_calls.at(0).arguments, R"({"city":"Paris","days":12})");
}

TEST(OutputStreaming, HermesOtherShapes) {
  const ParserOptions o = fmt(OutputFormat::kHermes);
  // Arguments before the name: held until the name, then sent with it.
  const std::string late = "<tool_call>\n{\"arguments\": {\"a\": 1}, \"name\": \"f\"}\n</tool_call>";
  const auto t = trace_calls(late, o);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_LT(t[0].name_at, late.size());
  EXPECT_EQ(t[0].arguments, R"({"a":1})");
  check_streaming(late, o);
  // Arguments as a JSON string holding an object: sent whole once the string is complete.
  const std::string str = "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1, 2]}\"}";
  expect_incremental(str, o, 0, str.size(), json{{"a", {1, 2}}}, 1);
  EXPECT_EQ(parse_output(str, o).tool_calls.at(0).arguments, R"({"a":[1,2]})");
  // Qwen's XML body in the same block syntax.
  const std::string xml =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nZürich \"Z\"\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=opts>\n{\"metric\": true, \"list\": [1, "
      "2.5, null]}\n</parameter>\n</function>\n</tool_call>";
  expect_incremental(xml, fmt(OutputFormat::kQwenXml), 0, at(xml, "<parameter=city>"), kArgs, 3);
}

TEST(OutputStreaming, Llama3) {
  const ParserOptions o = fmt(OutputFormat::kLlama3Json);
  const std::string text = "{\"name\": \"get_weather\", \"parameters\": " + kArgsText + "}";
  expect_incremental(text, o, 0, at(text, "Zürich"), kArgs, 20);
  // Undecided (not one of the tools): nothing is sent, then it is content.
  OutputParser p(o);
  EXPECT_TRUE(p.push("{\"name\": \"other\", \"parameters\": {\"a\": \"b").empty());
  EXPECT_EQ(p.push("\"}} ok").content, "{\"name\": \"other\", \"parameters\": {\"a\": \"b\"}} ok");
  // <|python_tag|>: a JSON call streams; code streams as "python"; NAME.call(...) comes whole.
  const std::string json_tag = "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": " +
                               kArgsText + "}<|eom_id|>";
  expect_incremental(json_tag, o, 0, at(json_tag, "Zürich"), kArgs, 20);
  const std::string code = "<|python_tag|>import math\nprint(\"ü\", math.pi)  \n<|eom_id|>";
  expect_incremental(code, o, 0, at(code, "print"),
                     json{{"code", "import math\nprint(\"ü\", math.pi)"}}, 10);
  const std::string builtin = "<|python_tag|>brave_search.call(query=\"a\", n=2)<|eom_id|>";
  const auto t = trace_calls(builtin, o);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].name, "brave_search");
  EXPECT_EQ(t[0].fragment_deltas, 1u);  // whole: only its end tells it from code
  check_streaming(builtin, o);
}

TEST(OutputStreaming, Mistral) {
  const std::string nemo = "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": " + kArgsText +
                           ", \"id\": \"abcdefghi\"}, {\"name\": \"b\", \"arguments\": {\"x\": "
                           "\"yy\", \"z\": 1}}]</s>";
  const ParserOptions o = fmt(OutputFormat::kMistralNemo);
  expect_incremental(nemo, o, 0, at(nemo, "Zürich"), kArgs, 20);
  expect_incremental(nemo, o, 1, at(nemo, "yy"), json{{"x", "yy"}, {"z", 1}}, 3);
  const std::string small =
      "[TOOL_CALLS]get_weather[CALL_ID]123456789[ARGS]" + kArgsText + "</s>";
  expect_incremental(small, fmt(OutputFormat::kMistralSmall), 0, at(small, "Zürich"), kArgs, 20);
  EXPECT_EQ(parse_output(small, fmt(OutputFormat::kMistralSmall)).tool_calls.at(0).id,
            "123456789");
}

TEST(OutputStreaming, HarmonyDeepSeekGemma4) {
  const std::string harmony =
      "<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>" + kArgsText + "<|call|>";
  expect_incremental(harmony, fmt(OutputFormat::kHarmony), 0, at(harmony, "Zürich"), kArgs, 20);
  const std::string deepseek =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n" +
      kArgsText + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  expect_incremental(deepseek, fmt(OutputFormat::kDeepSeekR1), 0, at(deepseek, "Zürich"), kArgs,
                     20);
  const std::string gemma =
      "<|tool_call>call:get_weather{city:<|\"|>Zürich \"Z\"<|\"|>,days:3,opts:{metric:true,"
      "list:[1,2.5,None]}}<tool_call|>";
  expect_incremental(gemma, fmt(OutputFormat::kGemma4), 0, at(gemma, "Zürich"), kArgs, 3);
}

// A call cut by the end of generation after its name was sent keeps what was sent, closed.
TEST(OutputStreaming, CutAfterTheNameIsClosed) {
  struct Case {
    OutputFormat f;
    std::string text;
    std::string args;
  };
  const std::string h = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ";
  const Case cases[] = {
      {OutputFormat::kHermes, h + "{\"city\": \"Zür", R"({"city":"Zür"})"},
      {OutputFormat::kHermes, h + "{\"a\": 1, \"b", R"({"a":1})"},
      {OutputFormat::kHermes, h + "{\"a\": 12", "{}"},
      {OutputFormat::kHermes, h + "{\"a\": [tr", R"({"a":[]})"},
      {OutputFormat::kHermes, h + "{\"a\": {\"b\": [\"x\\", R"({"a":{"b":["x"]}})"},
      {OutputFormat::kHermes, h + "{\"a\": \"\\ud83d", R"({"a":""})"},
      {OutputFormat::kHermes, h + "{\"a\": \"x\"}<|im_end|>", R"({"a":"x"})"},
      {OutputFormat::kQwenXml, "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n"
                               "<parameter=b>\ny", R"({"a":"x"})"},
      {OutputFormat::kLlama3Json, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"x\"",
       R"({"city":"x"})"},
      {OutputFormat::kMistralNemo, "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": [1, ",
       R"({"x":[1]})"},
      {OutputFormat::kMistralSmall, "[TOOL_CALLS]a[ARGS]{\"x\": ", "{}"},
      {OutputFormat::kHarmony, " to=functions.f<|channel|>commentary json<|message|>{\"a\": ",
       "{}"},
      {OutputFormat::kDeepSeekR1, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
                                  "a\n```json\n{\"x\": \"1", R"({"x":"1"})"},
      {OutputFormat::kGemma4, "<|tool_call>call:f{a:1,b:<|\"|>x", R"({"a":1})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const ParsedOutput r = check_streaming(c.text, fmt(c.f));
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].arguments, c.args);
    EXPECT_EQ(r.content, "");
  }
}

// Malformed after the name: the call keeps what was sent, closed; the rest of its text (up to
// where its syntax ends) is dropped; what follows the block is content again.
TEST(OutputStreaming, MalformedAfterTheNameIsClosed) {
  struct Case {
    OutputFormat f;
    std::string text;
    std::string args;
    std::string content;
  };
  const Case cases[] = {
      {OutputFormat::kHermes,
       "A\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1,,}}\n</tool_call>\nB",
       R"({"a":1})", "A\nB"},
      {OutputFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 01}}",
       R"({"a":0})", ""},
      {OutputFormat::kQwenXml,
       "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\nhm\n</function>\n</tool_call>B",
       R"({"a":"1"})", "B"},
      {OutputFormat::kMistralNemo,
       "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, 5]", "{}", ""},
      {OutputFormat::kHarmony,
       " to=functions.f<|channel|>commentary json<|message|>{\"a\": x}<|call|>", "{}", ""},
      {OutputFormat::kDeepSeekR1,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n{\"x\": 1} "
       "oops\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>B",
       R"({"x":1})", "B"},
      {OutputFormat::kGemma4, "<|tool_call>call:f{a:1,b}<tool_call|>B", R"({"a":1})", "B"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const ParsedOutput r = check_streaming(c.text, fmt(c.f));
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].arguments, c.args);
    EXPECT_EQ(r.content, c.content);
  }
}

TEST(OutputStreaming, DeepSeekCallsThenOtherText) {
  // After a committed call, text that is not another call ends the block: it is content.
  const std::string text =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n{}\n```"
      "<｜tool▁call▁end｜>\nDone.";
  const ParsedOutput r = check_streaming(text, fmt(OutputFormat::kDeepSeekR1));
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.content, "Done.");
}

TEST(OutputStreaming, ArgumentTextIsValidJson) {
  // Invalid UTF-8 is replaced, raw control characters and lone surrogates are escaped.
  const ParserOptions o = fmt(OutputFormat::kHermes);
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"x\xff\xc3(y\", "
                           "\"b\": \"1\n2\t\", \"c\": \"\\udc00 \\ud83d\\ude00 \\u00e9\"}}";
  const ParsedOutput r = check_streaming(text, o);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments,
            "{\"a\":\"x\xef\xbf\xbd\xef\xbf\xbd(y\",\"b\":\"1\\n2\\t\","
            "\"c\":\"\\ufffd \\ud83d\\ude00 \\u00e9\"}");
  // XML and Gemma 4 values go through nlohmann's serialiser (invalid UTF-8 replaced).
  const ParsedOutput x = check_streaming(
      "<tool_call>\n<function=f>\n<parameter=a>\n\xff\n</parameter>\n</function>", o);
  ASSERT_EQ(x.tool_calls.size(), 1u);
  EXPECT_EQ(x.tool_calls[0].arguments, "{\"a\":\"\xef\xbf\xbd\"}");
}

}  // namespace
}  // namespace ridge::chat
