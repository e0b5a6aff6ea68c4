// Grammars that force a tool call or a JSON answer in the model's own syntax: the texts the
// templates themselves write for a call are sentences of them; other names, missing required
// parameters and junk are not.
#include <gtest/gtest.h>

#include "chat/constraint_grammar.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace ridge::chat {
namespace {

using nlohmann::ordered_json;

ordered_json tools() {
  return ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
      "required": ["city"]}}},
    {"type": "function", "function": {"name": "ping"}}])");
}

// Whether `text` is a complete sentence of the grammar (byte-level vocabulary).
bool accepts(const std::string& gbnf, const std::string& text) {
  auto g = grammar::parse_gbnf(gbnf, kConstraintRoot);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << gbnf;
  if (!g.ok()) return false;
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
  auto idx = std::make_shared<const grammar::TokenIndex>(std::move(bytes), std::vector<int32_t>{});
  grammar::Matcher m(*g, idx);
  return m.accept_bytes(text).ok() && m.is_complete();
}

std::string calls(OutputFormat f, std::string_view only = "", bool parallel = true,
                  bool think = false, bool starts_in_reasoning = false) {
  ConstraintContext ctx;
  ctx.format = {f, think};
  ctx.starts_in_reasoning = starts_in_reasoning;
  auto g = tool_call_gbnf(tools(), only, parallel, ctx);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? *g : "";
}

TEST(ConstraintGrammar, HermesCalls) {
  const std::string g = calls(OutputFormat::kHermes);
  const std::string call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  EXPECT_TRUE(accepts(g, call));
  EXPECT_TRUE(accepts(g, call + "\n" + call));  // parallel calls
  EXPECT_TRUE(accepts(g, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n"
                          "</tool_call>"));  // city is required
  EXPECT_FALSE(accepts(g, "Sure! " + call));
  EXPECT_FALSE(accepts(calls(OutputFormat::kHermes, "", /*parallel=*/false), call + "\n" + call));
  EXPECT_FALSE(accepts(calls(OutputFormat::kHermes, "ping"), call));  // a named function only
}

TEST(ConstraintGrammar, ReasoningComesFirst) {
  const std::string call = "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>";
  const std::string g = calls(OutputFormat::kHermes, "", true, /*think=*/true);
  EXPECT_TRUE(accepts(g, call));
  EXPECT_TRUE(accepts(g, "<think>\nThe user wants a ping.\n</think>\n\n" + call));
  const std::string opened = calls(OutputFormat::kHermes, "", true, true, /*starts=*/true);
  EXPECT_TRUE(accepts(opened, "The user wants a ping.\n</think>\n\n" + call));
  EXPECT_FALSE(accepts(opened, call));  // the prompt opened <think>: it must be closed first
}

TEST(ConstraintGrammar, Llama3Calls) {
  const std::string g = calls(OutputFormat::kLlama3Json);
  EXPECT_TRUE(accepts(g, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", "
                         "\"days\": 3}}"));
  EXPECT_FALSE(accepts(g, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"));
}

TEST(ConstraintGrammar, QwenXmlCalls) {
  const std::string g = calls(OutputFormat::kQwenXml);
  // What Qwen3-Coder's template writes for a call (values span lines).
  const std::string call =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nSan\nFrancisco\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
  EXPECT_TRUE(accepts(g, call));
  EXPECT_TRUE(accepts(g, "<tool_call>\n<function=ping>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n<function=get_weather>\n<parameter=town>\nX\n"
                          "</parameter>\n</function>\n</tool_call>"));
}

TEST(ConstraintGrammar, JsonAfterReasoning) {
  auto schema = grammar::json_schema_to_gbnf_ordered(
      ordered_json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}},
                              "required": ["a"], "additionalProperties": false})"));
  ASSERT_TRUE(schema.ok());
  ConstraintContext ctx;
  ctx.format = {OutputFormat::kHermes, true};
  EXPECT_TRUE(accepts(after_reasoning(*schema, ctx), "<think>hmm</think>\n{\"a\": 1}"));
  ctx.reasoning_closed = true;  // thinking switched off: the JSON comes at once
  EXPECT_FALSE(accepts(after_reasoning(*schema, ctx), "<think>hmm</think>\n{\"a\": 1}"));
  EXPECT_TRUE(accepts(after_reasoning(*schema, ctx), "{\"a\": 1}"));
}

TEST(ConstraintGrammar, FormatsWithoutAGrammarAreRefused) {
  ConstraintContext ctx;
  ctx.format = {OutputFormat::kHarmony, false};
  auto g = tool_call_gbnf(tools(), "", true, ctx);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("harmony"), std::string::npos);
}

}  // namespace
}  // namespace ridge::chat
