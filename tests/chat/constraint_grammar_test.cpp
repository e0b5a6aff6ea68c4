// Grammars that force a tool call or a JSON answer in the model's own syntax: the texts the
// templates themselves write for a call are sentences of them; other names, missing required
// parameters and junk are not. For every family, random sentences (walks of the token mask over
// a small vocabulary holding the family's control tokens, stopped at end-of-generation tokens as
// the engine stops) are parsed back by parse_output into calls whose arguments validate (Python's
// jsonschema), or into the JSON content.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "chat/constraint_grammar.h"
#include "chat/output_parser.h"
#include "grammar/grammar.h"
#include "grammar/grammar_test_util.h"
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
    {"type": "function", "function": {"name": "ping"}},
    {"type": "function", "function": {"name": "book", "parameters": {"type": "object",
      "properties": {"kind": {"enum": ["hotel", "flight"]}, "n": {"type": "number"},
        "ok": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"},
        "maxItems": 2}, "when": {"type": "object", "properties": {"day": {"type": "integer"},
        "late": {"type": ["boolean", "null"]}}, "required": ["day"]}},
      "required": ["kind", "when"]}}}])");
}

// A family's vocabulary: the grammar tests' small vocabulary, then the family's markers as
// control tokens (no bytes; their text is what the detokenizer writes), the last `n_eog` of them
// end-of-generation tokens.
struct Vocab {
  std::vector<std::string> text;
  std::shared_ptr<const grammar::TokenIndex> index;
  grammar::TokenResolver resolver;
};

Vocab family_vocab(const std::vector<std::string>& markers, size_t n_eog) {
  Vocab v;
  v.text = grammar::small_vocab_strings();
  std::vector<int32_t> eog{static_cast<int32_t>(v.text.size()) - 2,
                           static_cast<int32_t>(v.text.size()) - 1};
  v.text.emplace_back("<think>");  // text tokens, as in Qwen's vocabulary
  v.text.emplace_back("</think>");
  std::vector<std::string> bytes = v.text;
  for (size_t i = 0; i < markers.size(); ++i) {
    if (i + n_eog >= markers.size()) eog.push_back(static_cast<int32_t>(v.text.size()));
    v.text.push_back(markers[i]);
    bytes.emplace_back();
  }
  v.index = std::make_shared<const grammar::TokenIndex>(std::move(bytes), std::move(eog));
  v.resolver.n_vocab = v.index->n_vocab();
  v.resolver.find = [text = v.text](std::string_view t) -> std::optional<int32_t> {
    for (size_t i = 0; i < text.size(); ++i) {
      if (!t.empty() && text[i] == t) return static_cast<int32_t>(i);
    }
    return std::nullopt;
  };
  return v;
}

// A model's output for a grammar: the control tokens of `markers` where the text has them
// (unless `spelled`: then their text is written in characters), other text greedily as the
// longest vocabulary token. True iff every token is accepted and the output is complete.
bool accepts(const std::string& gbnf, const std::string& text,
             const std::vector<std::string>& markers = {}, bool spelled = false) {
  const Vocab v = family_vocab(markers, 0);
  auto g = grammar::parse_gbnf(gbnf, kConstraintRoot, &v.resolver);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << gbnf;
  if (!g.ok()) return false;
  grammar::Matcher m(*g, v.index);
  for (size_t pos = 0; pos < text.size();) {
    int32_t best = -1;
    size_t len = 0;
    for (size_t i = 0; i < v.text.size(); ++i) {
      const bool is_marker = v.index->bytes(static_cast<int32_t>(i)).empty();
      if (is_marker && spelled) continue;
      const std::string& t = v.text[i];
      if (!t.empty() && text.compare(pos, t.size(), t) == 0 && (t.size() > len || is_marker)) {
        best = static_cast<int32_t>(i);
        len = t.size();
        if (is_marker) break;
      }
    }
    if (best < 0) {  // a byte of a character the vocabulary lacks
      if (!m.accept_bytes(text.substr(pos, 1)).ok()) return false;
      ++pos;
      continue;
    }
    if (!m.accept_token(best).ok()) return false;
    pos += len;
  }
  return m.is_complete();
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
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>";
  EXPECT_TRUE(accepts(g, call));
  EXPECT_TRUE(accepts(g, call + "\n" + call));  // parallel calls
  EXPECT_TRUE(accepts(g, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n"
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

TEST(ConstraintGrammar, Llama3AndQwenXmlCalls) {
  const std::string g = calls(OutputFormat::kLlama3Json);
  EXPECT_TRUE(accepts(g,
                      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", "
                      "\"days\": 3}}"));
  EXPECT_FALSE(accepts(g, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"));
  const std::string x = calls(OutputFormat::kQwenXml);
  // What Qwen3-Coder's template writes for a call (values span lines).
  EXPECT_TRUE(accepts(x,
                      "<tool_call>\n<function=get_weather>\n<parameter=city>\nSan\nFrancisco\n"
                      "</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n"
                      "</tool_call>"));
  EXPECT_TRUE(accepts(x, "<tool_call>\n<function=ping>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(x, "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>"));
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

const std::vector<std::string> kMistral = {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"};
const std::vector<std::string> kHarmony = {"<|channel|>", "<|message|>", "<|constrain|>",
                                           "<|start|>",   "<|end|>",     "<|return|>",
                                           "<|call|>"};
const std::vector<std::string> kDeepSeek = {"<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>",
                                            "<｜tool▁sep｜>",         "<｜tool▁call▁end｜>",
                                            "<｜tool▁calls▁end｜>",   "<｜end▁of▁sentence｜>"};
const std::vector<std::string> kGemma = {"<|tool_call>", "<tool_call|>", "<|\"|>",
                                         "<|channel>",   "<channel|>",   "<turn|>"};

// The texts the templates write for a call (markers as control tokens); the same text with the
// markers spelled in characters is not a call.
TEST(ConstraintGrammar, ControlTokenFamiliesAcceptTheTemplatesCalls) {
  const std::string small = calls(OutputFormat::kMistralSmall);
  const std::string s_call = "[TOOL_CALLS]get_weather[CALL_ID]abcDEF123[ARGS]{\"city\": \"Paris\"}";
  EXPECT_TRUE(accepts(small, s_call, kMistral));
  EXPECT_TRUE(accepts(small, s_call + "[TOOL_CALLS]ping[ARGS]{}", kMistral));
  EXPECT_FALSE(accepts(small, s_call, kMistral, /*spelled=*/true));
  EXPECT_FALSE(accepts(small, "[TOOL_CALLS]get_weather[ARGS]{\"days\": 1}", kMistral));
  EXPECT_FALSE(accepts(calls(OutputFormat::kMistralSmall, "ping"), s_call, kMistral));
  const std::string nemo = calls(OutputFormat::kMistralNemo);
  const std::string n_call =
      "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}, \"id\": \"abcDEF123\"}]";
  EXPECT_TRUE(accepts(nemo, n_call, kMistral));
  EXPECT_FALSE(accepts(nemo, n_call, kMistral, true));
  const std::string harmony = calls(OutputFormat::kHarmony);
  const std::string h_call =
      "<|channel|>commentary to=functions.get_weather <|constrain|>json"
      "<|message|>{\"city\": \"Paris\"}<|call|>";
  EXPECT_TRUE(accepts(harmony, h_call, kHarmony));
  EXPECT_FALSE(accepts(harmony, h_call, kHarmony, true));
  EXPECT_FALSE(accepts(harmony,
                       "<|channel|>analysis<|message|>hm<|end|><|start|>assistant" + h_call,
                       kHarmony));  // <|end|> stops generation: no analysis first
  const std::string deepseek = calls(OutputFormat::kDeepSeekR1, "", true, /*think=*/true);
  const std::string d_call =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
      "{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>";
  EXPECT_TRUE(accepts(deepseek,
                      "<｜tool▁calls▁begin｜>" + d_call + "\n" + d_call + "<｜tool▁calls▁end｜>",
                      kDeepSeek));
  EXPECT_TRUE(accepts(
      deepseek, "<think>\nok\n</think>\n\n<｜tool▁calls▁begin｜>" + d_call + "<｜tool▁calls▁end｜>",
      kDeepSeek));
  const std::string gemma = calls(OutputFormat::kGemma4, "", true, /*think=*/true);
  const std::string g_call =
      "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3}<tool_call|>";
  EXPECT_TRUE(accepts(gemma, g_call, kGemma));
  EXPECT_TRUE(accepts(gemma, "<|channel>thought\nok\n<channel|>" + g_call + g_call, kGemma));
  EXPECT_TRUE(accepts(gemma,
                      "<|tool_call>call:book{kind:<|\"|>hotel<|\"|>,tags:[<|\"|>a<|\"|>],"
                      "when:{day:2,late:None}}<tool_call|>",
                      kGemma));
  EXPECT_FALSE(accepts(gemma, "<|tool_call>call:get_weather{days:3,city:<|\"|>P<|\"|>}<tool_call|>",
                       kGemma));  // keys in sorted order, as the template writes them
  EXPECT_FALSE(accepts(gemma, g_call, kGemma, true));
}

// Each tool's arguments are converted on their own: local $refs resolve against the tool's own
// parameters schema, and the tools' rules do not collide.
TEST(ConstraintGrammar, PerToolArgumentRules) {
  const ordered_json t = ordered_json::parse(R"([
    {"type": "function", "function": {"name": "a", "parameters": {"type": "object",
      "properties": {"p": {"$ref": "#/$defs/code"}}, "required": ["p"],
      "$defs": {"code": {"type": "string", "pattern": "^[A-Z]{2}$"}}}}},
    {"type": "function", "function": {"name": "b", "parameters": {"type": "object",
      "properties": {"p": {"type": "integer"}}, "required": ["p"]}}}])");
  ConstraintContext ctx;
  ctx.format = {OutputFormat::kMistralSmall, false};
  auto g = tool_call_gbnf(t, "", true, ctx);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(
      accepts(*g, "[TOOL_CALLS]a[ARGS]{\"p\": \"FR\"}[TOOL_CALLS]b[ARGS]{\"p\": 7}", kMistral));
  EXPECT_FALSE(accepts(*g, "[TOOL_CALLS]a[ARGS]{\"p\": \"Fr\"}", kMistral));
  EXPECT_FALSE(accepts(*g, "[TOOL_CALLS]b[ARGS]{\"p\": \"FR\"}", kMistral));
}

TEST(ConstraintGrammar, RefusedFormatsAndSchemas) {
  ConstraintContext ctx;
  ctx.format = {OutputFormat::kContentOnly, false};
  auto g = tool_call_gbnf(tools(), "", true, ctx);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("content"), std::string::npos) << g.status().message();
  ctx.format = {OutputFormat::kGemma4, false};
  auto pattern = tool_call_gbnf(ordered_json::parse(R"([{"type": "function", "function": {
      "name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string",
      "pattern": "^a+$"}}}}}])"),
                                "", true, ctx);
  ASSERT_FALSE(pattern.ok());
  EXPECT_NE(pattern.status().message().find("/properties/s: keyword 'pattern'"), std::string::npos)
      << pattern.status().message();
}

// Random sentences of each family's grammars, parsed back.
const char* kValidator = R"py(
import json, sys
from jsonschema import Draft202012Validator
data = json.load(open(sys.argv[1], encoding="utf-8"))
bad = []
for d in data:
    try:
        errs = list(Draft202012Validator(d["schema"]).iter_errors(json.loads(d["value"])))
    except ValueError as e:
        errs = [e]
    if errs:
        bad.append(f"{errs[0]}"[:200] + f" | {d['schema']} | {d['value'][:300]!r}")
print(f"checked {len(data)} invalid {len(bad)}")
for m in bad[:10]: print(m)
)py";

struct Walker {
  // RIDGE_CONSTRAINT_SEED=n: other walks.
  std::mt19937 rng{std::getenv("RIDGE_CONSTRAINT_SEED")
                       ? static_cast<uint32_t>(std::atoi(std::getenv("RIDGE_CONSTRAINT_SEED")))
                       : 5u};
  nlohmann::json pairs = nlohmann::json::array();  // {schema, value} to validate

  // Samples one output (stopping at an end-of-generation token, whose text is not output).
  std::string sample(const std::string& gbnf, const Vocab& v) {
    auto g = grammar::parse_gbnf(gbnf, kConstraintRoot, &v.resolver);
    EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << gbnf;
    if (!g.ok()) return "";
    grammar::Matcher m(*g, v.index);
    std::string out;
    std::vector<uint8_t> mask;
    for (int n = 0; n < 4000; ++n) {
      m.fill_mask(mask);
      std::vector<int32_t> allowed;
      for (size_t t = 0; t < mask.size(); ++t) {
        if (mask[t]) allowed.push_back(static_cast<int32_t>(t));
      }
      if (allowed.empty()) break;
      const int32_t t = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      EXPECT_TRUE(m.accept_token(t).ok());
      if (v.index->is_eog(t)) return out;
      out += v.text[static_cast<size_t>(t)];
    }
    ADD_FAILURE() << "no end of generation: " << out.substr(0, 300);
    return out;
  }

  void calls(OutputFormat f, bool think, const std::vector<std::string>& markers, size_t n_eog,
             std::string_view only, bool parallel, int walks, ConstraintContext ctx = {}) {
    const Vocab v = family_vocab(markers, n_eog);
    ctx.format = {f, think};
    auto g = tool_call_gbnf(tools(), only, parallel, ctx);
    ASSERT_TRUE(g.ok()) << g.status().message();
    ParserOptions o;
    o.format = ctx.format;
    o.starts_in_reasoning = ctx.starts_in_reasoning;
    o.tools = nlohmann::json::parse(tools().dump());
    for (int w = 0; w < walks; ++w) {
      const std::string out = sample(*g, v);
      const ParsedOutput p = parse_output(out, o);
      SCOPED_TRACE(out);
      ASSERT_GE(p.tool_calls.size(), 1u);
      if (!parallel || f == OutputFormat::kHarmony) {
        EXPECT_EQ(p.tool_calls.size(), 1u);
      }
      EXPECT_EQ(p.content.find_first_not_of(" \n"), std::string::npos) << p.content;
      for (const ToolCall& c : p.tool_calls) {
        if (!only.empty()) {
          EXPECT_EQ(c.name, only);
        }
        ordered_json schema = nullptr;
        for (const auto& t : tools()) {
          if (t["function"]["name"] == c.name) {
            schema = t["function"].value("parameters", ordered_json{{"type", "object"}});
          }
        }
        ASSERT_FALSE(schema.is_null()) << "unknown tool " << c.name;
        pairs.push_back({{"schema", nlohmann::json::parse(schema.dump())}, {"value", c.arguments}});
      }
    }
  }

  void json(OutputFormat f, bool think, const std::vector<std::string>& markers, size_t n_eog,
            int walks, ConstraintContext ctx = {}) {
    const Vocab v = family_vocab(markers, n_eog);
    ctx.format = {f, think};
    const ordered_json schema = tools()[2]["function"]["parameters"];
    auto body = grammar::json_schema_to_gbnf_ordered(schema);
    ASSERT_TRUE(body.ok());
    const std::string g = after_reasoning(*body, ctx);
    ParserOptions o;
    o.format = ctx.format;
    o.starts_in_reasoning = ctx.starts_in_reasoning;
    o.parse_tools = false;
    for (int w = 0; w < walks; ++w) {
      const std::string out = sample(g, v);
      const ParsedOutput p = parse_output(out, o);
      SCOPED_TRACE(out);
      EXPECT_TRUE(p.tool_calls.empty());
      pairs.push_back({{"schema", nlohmann::json::parse(schema.dump())}, {"value", p.content}});
    }
  }
};

TEST(ConstraintGrammar, RandomSentencesParseBack) {
  if (std::system("/usr/bin/python3 -c 'import jsonschema' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs /usr/bin/python3 with the jsonschema module";
  }
  Walker w;
  ConstraintContext analysis;  // Harmony where <|end|> does not end generation
  analysis.harmony_end_stops = false;
  const std::vector<std::string> harmony_end_not_eog = {
      "<|channel|>", "<|message|>", "<|constrain|>", "<|start|>",
      "<|end|>",     "<|return|>",  "<|call|>"};
  for (const auto& [only, parallel] : {std::pair<std::string_view, bool>{"", true},
                                       std::pair<std::string_view, bool>{"book", false}}) {
    w.calls(OutputFormat::kHermes, true, {}, 0, only, parallel, 10);
    w.calls(OutputFormat::kMistralNemo, false, kMistral, 0, only, parallel, 20);
    w.calls(OutputFormat::kMistralSmall, false, kMistral, 0, only, parallel, 20);
    w.calls(OutputFormat::kHarmony, false, kHarmony, 3, only, parallel, 20);
    w.calls(OutputFormat::kHarmony, false, harmony_end_not_eog, 2, only, parallel, 20, analysis);
    w.calls(OutputFormat::kDeepSeekR1, true, kDeepSeek, 1, only, parallel, 20);
    w.calls(OutputFormat::kGemma4, true, kGemma, 1, only, parallel, 30);
    w.calls(OutputFormat::kGemma4, false, kGemma, 1, only, parallel, 10);
  }
  w.json(OutputFormat::kHarmony, false, kHarmony, 3, 20);
  w.json(OutputFormat::kHarmony, false, harmony_end_not_eog, 2, 20, analysis);
  w.json(OutputFormat::kGemma4, true, kGemma, 1, 20);
  w.json(OutputFormat::kDeepSeekR1, true, kDeepSeek, 1, 20);
  w.json(OutputFormat::kMistralSmall, false, kMistral, 0, 10);
  const auto path = std::filesystem::temp_directory_path() /
                    ("ridge_constraint_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << w.pairs.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::ofstream(path.string() + ".py") << kValidator;
  std::string result;
  if (FILE* p = popen(
          ("/usr/bin/python3 '" + path.string() + ".py' '" + path.string() + "' 2>&1").c_str(),
          "r")) {
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) result += buf;
    pclose(p);
  }
  std::filesystem::remove(path);
  std::filesystem::remove(path.string() + ".py");
  EXPECT_NE(result.find("checked " + std::to_string(w.pairs.size()) + " invalid 0\n"),
            std::string::npos)
      << result;
}

}  // namespace
}  // namespace ridge::chat
