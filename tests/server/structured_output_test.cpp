// Tool calls, reasoning and structured outputs through the whole server: the fake model's text
// is steered by a grammar (the `grammar` extension or response_format), and the response must
// carry it as OpenAI's tool_calls / reasoning_content / JSON content, streamed and not.
#include <gtest/gtest.h>

#include <regex>

#include "test_server_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using testing::TestServer;

// GBNF for exactly `text`.
std::string exactly(const std::string& text) {
  std::string g = "root ::= \"";
  for (char c : text) {
    if (c == '"' || c == '\\') g += '\\';
    if (c == '\n') {
      g += "\\n";
      continue;
    }
    g += c;
  }
  return g + "\"";
}

json weather_tool() {
  return {{"type", "function"},
          {"function", {{"name", "get_weather"},
                        {"parameters", {{"type", "object"},
                                        {"properties", {{"city", {{"type", "string"}}}}}}}}}};
}

// ChatML that ignores tools (the fake model cannot read them anyway).
Result<chat::RenderedPrompt> chatml_without_tools(const chat::Conversation& c) {
  chat::Conversation plain = c;
  plain.tools = nullptr;
  return testing::chatml_renderer()(plain);
}

class StructuredOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    ts_.make_ready([](ModelContext& ctx) {
      ctx.render_chat = chatml_without_tools;
      ctx.output_format = {chat::OutputFormat::kHermes, /*think_tags=*/true};
    });
  }
  std::string body(const std::string& forced, json extra = json::object()) {
    json j = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
              {"tools", {weather_tool()}},
              {"grammar", exactly(forced)},
              {"temperature", 0},
              {"max_tokens", 200}};
    for (auto& [k, v] : extra.items()) j[k] = v;
    return j.dump();
  }
  TestServer ts_{ServerOptions{}, TestServer::default_engine(), 256, /*ready=*/false};
};

const std::string kCall =
    "<think>Paris it is.</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>";

TEST_F(StructuredOutput, ToolCallAndReasoningAreParsedOut) {
  auto [st, j] = ts_.post("/v1/chat/completions", body(kCall));
  ASSERT_EQ(st, 200) << j.dump();
  const json& choice = j["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  const json& m = choice["message"];
  EXPECT_TRUE(m["content"].is_null()) << m.dump();
  EXPECT_EQ(m["reasoning_content"], "Paris it is.");
  ASSERT_EQ(m["tool_calls"].size(), 1u) << m.dump();
  const json& call = m["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_"));
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()),
            json({{"city", "Paris"}}));
}

TEST_F(StructuredOutput, StreamedDeltasAddUpToTheSameCall) {
  httplib::Client c = ts_.client();
  auto r = c.Post("/v1/chat/completions", body(kCall, {{"stream", true}}), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  std::string content, reasoning, name, args, id, finish;
  int n_first = 0;
  for (const std::string& p : testing::sse_payloads(r->body)) {
    if (p == "[DONE]") continue;
    const json ch = json::parse(p)["choices"][0];
    const json& d = ch["delta"];
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    for (const json& t : d.value("tool_calls", json::array())) {
      EXPECT_EQ(t["index"], 0);
      if (t.contains("id")) {
        ++n_first;
        id = t["id"];
        EXPECT_EQ(t["type"], "function");
      }
      if (t["function"].contains("name")) name += t["function"]["name"].get<std::string>();
      args += t["function"].value("arguments", "");
    }
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
  }
  EXPECT_EQ(n_first, 1);  // id and type once, in the call's first delta
  EXPECT_TRUE(id.starts_with("call_"));
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(json::parse(args), json({{"city", "Paris"}}));
  EXPECT_EQ(reasoning, "Paris it is.");
  EXPECT_EQ(content.find("<tool_call>"), std::string::npos) << content;
  EXPECT_EQ(finish, "tool_calls");
}

TEST_F(StructuredOutput, ToolCallTextIsContentWithoutTools) {
  // Without tools nothing is parsed as a call: the text stays content.
  json j = json::parse(body(kCall));
  j.erase("tools");
  auto [st, r] = ts_.post("/v1/chat/completions", j.dump());
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_NE(r["choices"][0]["message"]["content"].get<std::string>().find("<tool_call>"),
            std::string::npos);
  EXPECT_FALSE(r["choices"][0]["message"].contains("tool_calls"));
}

TEST_F(StructuredOutput, ParallelToolCallsFalseKeepsTheFirstCall) {
  const std::string two = kCall + "\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                  "{\"city\": \"Lyon\"}}\n</tool_call>";
  auto [st, j] = ts_.post("/v1/chat/completions", body(two));
  ASSERT_EQ(st, 200);
  EXPECT_EQ(j["choices"][0]["message"]["tool_calls"].size(), 2u) << j.dump();
  std::tie(st, j) = ts_.post("/v1/chat/completions", body(two, {{"parallel_tool_calls", false}}));
  ASSERT_EQ(st, 200);
  ASSERT_EQ(j["choices"][0]["message"]["tool_calls"].size(), 1u) << j.dump();
  EXPECT_EQ(json::parse(j["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
                            .get<std::string>()),
            json({{"city", "Paris"}}));
}

// Room for the fake model, which takes all the whitespace a JSON grammar allows (its greedy
// choice among equally scored tokens is the lowest id: tab, newline, space).
engine::EngineOptions roomy_engine() {
  engine::EngineOptions o = TestServer::default_engine();
  o.max_model_len = 2048;
  return o;
}

// A server whose model writes Hermes tool calls, with or without <think> reasoning.
std::unique_ptr<TestServer> hermes_server(bool think_tags) {
  auto ts = std::make_unique<TestServer>(ServerOptions{}, roomy_engine(), 1024, /*ready=*/false);
  ts->make_ready([think_tags](ModelContext& ctx) {
    ctx.render_chat = chatml_without_tools;
    ctx.output_format = {chat::OutputFormat::kHermes, think_tags};
  });
  return ts;
}

json unit_tool(const std::string& name) {
  return {{"type", "function"},
          {"function", {{"name", name},
                        {"parameters", {{"type", "object"},
                                        {"properties", {{"unit", {{"enum", {"c", "f"}}}}}},
                                        {"required", {"unit"}},
                                        {"additionalProperties", false}}}}}};
}

TEST(ForcedToolCall, RequiredAndNamedProduceACall) {
  auto ts = hermes_server(/*think_tags=*/false);
  json j = {{"messages", {{{"role", "user"}, {"content", "temperature?"}}}},
            {"tools", {unit_tool("get_temperature"), unit_tool("get_humidity")}},
            {"tool_choice", "required"},
            {"parallel_tool_calls", false},
            {"temperature", 0},
            {"max_tokens", 1500}};
  auto [st, r] = ts->post("/v1/chat/completions", j.dump());
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls") << r.dump();
  const json& calls = r["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << r.dump();
  const std::string name = calls[0]["function"]["name"];
  EXPECT_TRUE(name == "get_temperature" || name == "get_humidity") << name;
  const json args = json::parse(calls[0]["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(args == json({{"unit", "c"}}) || args == json({{"unit", "f"}})) << args.dump();
  j["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_humidity"}}}};
  std::tie(st, r) = ts->post("/v1/chat/completions", j.dump());
  ASSERT_EQ(st, 200) << r.dump();
  EXPECT_EQ(r["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "get_humidity");
  // A forced call and response_format contradict each other.
  j["response_format"] = {{"type", "json_object"}};
  std::tie(st, r) = ts->post("/v1/chat/completions", j.dump());
  EXPECT_EQ(st, 400);
  EXPECT_EQ(r["error"]["param"], "tool_choice");
}

// gpt-oss: the markers of its Harmony format are control tokens; a vocabulary without them
// cannot be forced into a call (a 400 naming the token), one with them can.
TEST(ForcedToolCall, HarmonyNeedsItsControlTokens) {
  TestServer ts(ServerOptions{}, TestServer::default_engine(), 256, /*ready=*/false);
  ts.make_ready([](ModelContext& ctx) {
    ctx.render_chat = chatml_without_tools;
    ctx.output_format = {chat::OutputFormat::kHarmony, false};
  });
  json j = {{"messages", {{{"role", "user"}, {"content", "x"}}}},
            {"tools", {unit_tool("f")}},
            {"tool_choice", "required"}};
  auto [st, r] = ts.post("/v1/chat/completions", j.dump());
  EXPECT_EQ(st, 400);
  EXPECT_EQ(r["error"]["param"], "tool_choice");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("<|channel|>"), std::string::npos)
      << r.dump();
}

const std::vector<std::string> kHarmonyTokens = {"<|start|>", "<|channel|>", "<|message|>",
                                                 "<|end|>", "<|call|>", "<|return|>",
                                                 "<|constrain|>"};

std::unique_ptr<TestServer> harmony_server() {
  auto ts = std::make_unique<TestServer>(ServerOptions{}, roomy_engine(), 1024, /*ready=*/false,
                                         kHarmonyTokens);
  ts->make_ready([](ModelContext& ctx) {
    ctx.render_chat = chatml_without_tools;
    ctx.output_format = {chat::OutputFormat::kHarmony, false};
    // The fake model's analysis would never end: the answer comes first.
    ctx.separate_reasoning = false;
  });
  return ts;
}

TEST(ForcedToolCall, HarmonyCallsAreForced) {
  auto ts = harmony_server();
  json j = {{"messages", {{{"role", "user"}, {"content", "temperature?"}}}},
            {"tools", {unit_tool("get_temperature"), unit_tool("get_humidity")}},
            {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_humidity"}}}}},
            {"temperature", 0},
            {"max_tokens", 1500}};
  for (bool stream : {false, true}) {
    j["stream"] = stream;
    httplib::Client c = ts->client();
    auto r = c.Post("/v1/chat/completions", j.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    std::string name, args, finish, content;
    if (stream) {
      for (const std::string& p : testing::sse_payloads(r->body)) {
        if (p == "[DONE]") continue;
        const json ch = json::parse(p)["choices"][0];
        content += ch["delta"].value("content", "");
        for (const json& t : ch["delta"].value("tool_calls", json::array())) {
          name += t["function"].value("name", "");
          args += t["function"].value("arguments", "");
        }
        if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
      }
    } else {
      const json b = json::parse(r->body);
      const json& m = b["choices"][0]["message"];
      ASSERT_EQ(m["tool_calls"].size(), 1u) << b.dump();
      name = m["tool_calls"][0]["function"]["name"];
      args = m["tool_calls"][0]["function"]["arguments"];
      finish = b["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(finish, "tool_calls") << r->body;
    EXPECT_EQ(name, "get_humidity") << r->body;
    const json a = json::parse(args, nullptr, false);
    EXPECT_TRUE(a == json({{"unit", "c"}}) || a == json({{"unit", "f"}})) << args;
    EXPECT_EQ(content.find("<|"), std::string::npos) << content;
  }
}

TEST(JsonOutput, HarmonyAnswerIsTheFinalChannel) {
  auto ts = harmony_server();
  json j = {{"messages", {{{"role", "user"}, {"content", "a number"}}}},
            {"response_format",
             {{"type", "json_schema"},
              {"json_schema", {{"name", "n"},
                               {"schema", {{"type", "object"},
                                           {"properties", {{"n", {{"enum", {1, 2}}}}}},
                                           {"required", {"n"}},
                                           {"additionalProperties", false}}}}}}},
            {"temperature", 0},
            {"max_tokens", 1500}};
  auto [st, r] = ts->post("/v1/chat/completions", j.dump());
  ASSERT_EQ(st, 200) << r.dump();
  const json& m = r["choices"][0]["message"];
  const json out = json::parse(m["content"].get<std::string>(), nullptr, false);
  EXPECT_TRUE(out == json({{"n", 1}}) || out == json({{"n", 2}})) << r.dump();
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
}

TEST(JsonOutput, SchemaOutputValidates) {
  TestServer ts(ServerOptions{}, roomy_engine(), 1024);  // content-only: JSON is the answer
  // "n" before "color": generated in this order (a sorted map would put "color" first).
  const std::string schema_text = R"({"type": "object", "properties": {
      "n": {"type": "integer", "minimum": 0, "maximum": 9},
      "color": {"enum": ["red", "green"]}}, "required": ["n", "color"],
      "additionalProperties": false})";
  for (bool stream : {false, true}) {
    const std::string body = R"({"messages": [{"role": "user", "content": "a color"}],
        "temperature": 0, "max_tokens": 1500, "stream": )" + std::string(stream ? "true" : "false") +
        R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": )" +
        schema_text + "}}}";
    httplib::Client c = ts.client();
    auto r = c.Post("/v1/chat/completions", body, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    std::string content, finish;
    if (stream) {
      for (const std::string& p : testing::sse_payloads(r->body)) {
        if (p == "[DONE]") continue;
        const json ch = json::parse(p)["choices"][0];
        content += ch["delta"].value("content", "");
        if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
      }
    } else {
      const json b = json::parse(r->body);
      content = b["choices"][0]["message"]["content"];
      finish = b["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(finish, "stop") << content;
    const nlohmann::ordered_json out = nlohmann::ordered_json::parse(content, nullptr, false);
    ASSERT_TRUE(out.is_object()) << content;
    EXPECT_EQ(out.size(), 2u) << content;
    EXPECT_EQ(out.begin().key(), "n") << "properties come in the schema's order, not sorted";
    EXPECT_TRUE(out["color"] == "red" || out["color"] == "green") << content;
    ASSERT_TRUE(out["n"].is_number_integer()) << content;
    EXPECT_GE(out["n"].get<int>(), 0);
    EXPECT_LE(out["n"].get<int>(), 9);
  }
}

TEST_F(StructuredOutput, BadGrammarsAndSchemasAre400s) {
  auto [st, j] = ts_.post("/v1/chat/completions", body("x", {{"grammar", "root ::= ("}}));
  EXPECT_EQ(st, 400);
  EXPECT_EQ(j["error"]["param"], "grammar") << j.dump();
  json bad = {{"messages", {{{"role", "user"}, {"content", "x"}}}},
              {"response_format", {{"type", "json_schema"},
                                   {"json_schema", {{"name", "x"},
                                                    {"schema", {{"type", "object"},
                                                                {"patternProperties",
                                                                 {{"^a", {{"type", "string"}}}}}}}}}}}};
  std::tie(st, j) = ts_.post("/v1/chat/completions", bad.dump());
  EXPECT_EQ(st, 400);
  EXPECT_EQ(j["error"]["param"], "response_format") << j.dump();
  EXPECT_NE(j["error"]["message"].get<std::string>().find("patternProperties"), std::string::npos);
}

TEST(RegexOutput, WholeOutputMatchesThePattern) {
  TestServer ts(ServerOptions{}, roomy_engine(), 1024);
  const std::string pattern = R"((yes|no), [0-9]{3}-[a-z]{2,4}\.)";
  const std::regex oracle(pattern);
  for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
    json j = {{"regex", pattern}, {"temperature", 0}, {"max_tokens", 100}};
    if (std::string_view(path) == "/v1/completions") {
      j["prompt"] = "answer:";
    } else {
      j["messages"] = {{{"role", "user"}, {"content", "answer"}}};
    }
    auto [st, r] = ts.post(path, j.dump());
    ASSERT_EQ(st, 200) << r.dump();
    const json& ch = r["choices"][0];
    const std::string text = ch.contains("message") ? ch["message"]["content"] : ch["text"];
    EXPECT_TRUE(std::regex_match(text, oracle)) << path << ": " << text;
    EXPECT_EQ(ch["finish_reason"], "stop") << text;
  }
}

TEST_F(StructuredOutput, BadRegexesAre400s) {
  json j = {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"regex", "(a"}};
  auto [st, r] = ts_.post("/v1/chat/completions", j.dump());
  EXPECT_EQ(st, 400);
  EXPECT_EQ(r["error"]["param"], "regex") << r.dump();
  EXPECT_NE(r["error"]["message"].get<std::string>().find("regex: unclosed '('"),
            std::string::npos) << r.dump();
  j["regex"] = "a(?=b)";
  std::tie(st, r) = ts_.post("/v1/chat/completions", j.dump());
  EXPECT_EQ(st, 400);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("lookaround"), std::string::npos);
  j["regex"] = "";
  std::tie(st, r) = ts_.post("/v1/chat/completions", j.dump());
  EXPECT_EQ(st, 400);
  j["regex"] = "a+";
  j["grammar"] = "root ::= \"a\"";
  std::tie(st, r) = ts_.post("/v1/chat/completions", j.dump());
  EXPECT_EQ(st, 400);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("at most one"), std::string::npos);
}

TEST_F(StructuredOutput, ApplyTemplateRendersWithoutGenerating) {
  auto [st, j] = ts_.post("/apply-template",
                          R"({"messages": [{"role": "user", "content": "hi <|im_end|>"}]})");
  ASSERT_EQ(st, 200) << j.dump();
  EXPECT_EQ(j["prompt"], "<|im_start|>user\nhi <|im_end|><|im_end|>\n<|im_start|>assistant\n");
  std::tie(st, j) = ts_.post("/apply-template", R"({"messages": []})");
  EXPECT_EQ(st, 400);
  EXPECT_EQ(j["error"]["param"], "messages");
}

TEST_F(StructuredOutput, HarmlessFieldsAreAccepted) {
  auto [st, j] = ts_.post("/v1/chat/completions",
                          testing::chat_body("hi", {{"store", true},
                                                    {"metadata", {{"team", "x"}}},
                                                    {"service_tier", "default"}}));
  EXPECT_EQ(st, 200) << j.dump();
}

// A constrained sequence batched with an unconstrained one changes nothing for the latter: its
// text is the one it gets alone (the mask is per sequence).
TEST(JsonOutput, UnconstrainedNeighboursAreUnchanged) {
  TestServer ts(ServerOptions{}, roomy_engine(), 1024);
  const std::string plain = testing::chat_body("the same text", {{"max_tokens", 40}});
  auto [st, alone] = ts.post("/v1/chat/completions", plain);
  ASSERT_EQ(st, 200) << alone.dump();
  ts.runner().step_ms = 2;  // both requests share steps
  const std::string constrained = nlohmann::json(
      {{"messages", {{{"role", "user"}, {"content", "json"}}}},
       {"response_format", {{"type", "json_object"}}},
       {"temperature", 0},
       {"max_tokens", 200}}).dump();
  std::thread other([&] { (void)ts.post("/v1/chat/completions", constrained); });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto [st2, batched] = ts.post("/v1/chat/completions", plain);
  other.join();
  ASSERT_EQ(st2, 200) << batched.dump();
  EXPECT_EQ(batched["choices"][0]["message"]["content"],
            alone["choices"][0]["message"]["content"]);
}

}  // namespace
}  // namespace ridge::server
