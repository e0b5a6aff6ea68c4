// The chat parts of a request body: messages as the template gets them, tools and tool_choice,
// template variables, output constraints, and OpenAI fields that are accepted without effect.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace ridge::server::chat_request_test {
namespace {

using json = nlohmann::ordered_json;

json weather_tool() {
  return {{"type", "function"},
          {"function", {{"name", "get_weather"},
                        {"description", "Weather of a city"},
                        {"parameters", {{"type", "object"},
                                        {"properties", {{"city", {{"type", "string"}}}}},
                                        {"required", {"city"}}}}}}};
}

json chat(json extra = json::object()) {
  json j = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}

std::optional<ApiError> parse(const json& body, GenerationSpec& s,
                              Endpoint ep = Endpoint::kChat) {
  return parse_generation_request(body, ep, RequestLimits{}, 7, s);
}

std::string rejected_field(const json& body, Endpoint ep = Endpoint::kChat) {
  GenerationSpec s;
  auto e = parse(body, s, ep);
  if (!e) return "";
  EXPECT_EQ(e->status, 400);
  return e->param.empty() ? "<none>" : e->param;
}

TEST(ChatRequest, ToolConversationRoundTripsIntoTemplateMessages) {
  json body = chat({{"tools", {weather_tool()}}});
  body["messages"] = {
      {{"role", "user"}, {"content", "Weather in Paris?"}},
      {{"role", "assistant"}, {"content", nullptr}, {"reasoning_content", "Need the tool."},
       {"tool_calls", {{{"id", "call_1"}, {"type", "function"},
                        {"function", {{"name", "get_weather"},
                                      {"arguments", "{\"city\": \"Paris\", \"days\": 2}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}}};
  GenerationSpec s;
  ASSERT_FALSE(parse(body, s));
  const json& m = s.chat.conversation.messages;
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1]["content"], "");  // null content of a tool-calling turn
  EXPECT_EQ(m[1]["reasoning_content"], "Need the tool.");
  const json& args = m[1]["tool_calls"][0]["function"]["arguments"];
  ASSERT_TRUE(args.is_object()) << args.dump();  // JSON text became the object, key order kept
  EXPECT_EQ(args.dump(), R"({"city":"Paris","days":2})");
  EXPECT_EQ(m[1]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(m[2]["tool_call_id"], "call_1");
  EXPECT_EQ(s.chat.conversation.tools.size(), 1u);
  EXPECT_EQ(s.chat.tool_choice, ToolChoice::kAuto);
  EXPECT_TRUE(s.chat.has_tools());
}

TEST(ChatRequest, ArgumentsThatAreNotAnObjectStayText) {
  json body = chat();
  body["messages"].push_back(
      {{"role", "assistant"},
       {"tool_calls", {{{"function", {{"name", "f"}, {"arguments", "not json"}}}}}}});
  GenerationSpec s;
  ASSERT_FALSE(parse(body, s));
  EXPECT_EQ(s.chat.conversation.messages[1]["tool_calls"][0]["function"]["arguments"],
            "not json");
}

TEST(ChatRequest, ToolChoiceForms) {
  GenerationSpec s;
  ASSERT_FALSE(parse(chat({{"tools", {weather_tool()}}, {"tool_choice", "none"}}), s));
  EXPECT_EQ(s.chat.tool_choice, ToolChoice::kNone);
  EXPECT_TRUE(s.chat.conversation.tools.is_null());  // "none" keeps tools out of the prompt
  ASSERT_FALSE(parse(chat({{"tools", {weather_tool()}}, {"tool_choice", "required"}}), s));
  EXPECT_EQ(s.chat.tool_choice, ToolChoice::kRequired);
  ASSERT_FALSE(parse(chat({{"tools", {weather_tool()}},
                           {"tool_choice", {{"type", "function"},
                                            {"function", {{"name", "get_weather"}}}}}}),
                     s));
  EXPECT_EQ(s.chat.tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(s.chat.tool_choice_name, "get_weather");
  ASSERT_FALSE(parse(chat({{"parallel_tool_calls", false}}), s));  // harmless without tools
  EXPECT_FALSE(s.chat.parallel_tool_calls);
  ASSERT_FALSE(parse(chat({{"tools", json::array()}}), s));
  EXPECT_FALSE(s.chat.has_tools());
}

TEST(ChatRequest, BadToolsNameTheField) {
  EXPECT_EQ(rejected_field(chat({{"tools", "x"}})), "tools");
  EXPECT_EQ(rejected_field(chat({{"tools", {{{"type", "retrieval"}}}}})), "tools[0].type");
  EXPECT_EQ(rejected_field(chat({{"tools", {{{"type", "function"}, {"function", {{"x", 1}}}}}}})),
            "tools[0].function.name");
  json bad_params = weather_tool();
  bad_params["function"]["parameters"] = "object";
  EXPECT_EQ(rejected_field(chat({{"tools", {bad_params}}})), "tools[0].function.parameters");
  EXPECT_EQ(rejected_field(chat({{"tool_choice", "required"}})), "tool_choice");
  EXPECT_EQ(rejected_field(chat({{"tool_choice", "sometimes"}})), "tool_choice");
  EXPECT_EQ(rejected_field(chat({{"tools", {weather_tool()}},
                                 {"tool_choice", {{"type", "function"},
                                                  {"function", {{"name", "nope"}}}}}})),
            "tool_choice");
  EXPECT_EQ(rejected_field(chat({{"parallel_tool_calls", "yes"}})), "parallel_tool_calls");
  json calls = chat();
  calls["messages"].push_back({{"role", "assistant"}, {"tool_calls", {{{"function", 1}}}}});
  EXPECT_EQ(rejected_field(calls), "messages[1].tool_calls[0].function");
  json user_calls = chat();
  user_calls["messages"][0]["tool_calls"] = json::array();
  EXPECT_EQ(rejected_field(user_calls), "messages[0].tool_calls");  // only assistants call tools
}

TEST(ChatRequest, TemplateVariables) {
  GenerationSpec s;
  ASSERT_FALSE(parse(chat({{"chat_template_kwargs", {{"enable_thinking", false}}},
                           {"reasoning_effort", "high"}}),
                     s));
  EXPECT_EQ(s.chat.conversation.kwargs["enable_thinking"], false);
  EXPECT_EQ(s.chat.conversation.kwargs["reasoning_effort"], "high");
  // An explicit template variable wins over the OpenAI field.
  ASSERT_FALSE(parse(chat({{"chat_template_kwargs", {{"reasoning_effort", "low"}}},
                           {"reasoning_effort", "high"}}),
                     s));
  EXPECT_EQ(s.chat.conversation.kwargs["reasoning_effort"], "low");
  EXPECT_EQ(rejected_field(chat({{"chat_template_kwargs", "x"}})), "chat_template_kwargs");
  EXPECT_EQ(rejected_field(chat({{"reasoning_effort", "max"}})), "reasoning_effort");
}

TEST(ChatRequest, HarmlessFieldsAreAcceptedAndReported) {
  GenerationSpec s;
  ASSERT_FALSE(parse(chat({{"store", false}, {"metadata", {{"k", "v"}}},
                           {"service_tier", "auto"}, {"modalities", {"text"}}}),
                     s));
  EXPECT_EQ(s.ignored_fields, (std::vector<std::string>{"store", "metadata", "service_tier"}));
  ASSERT_FALSE(parse({{"prompt", "x"}, {"metadata", json::object()}}, s, Endpoint::kCompletion));
  EXPECT_EQ(s.ignored_fields, (std::vector<std::string>{"metadata"}));
  // Fields whose meaning ridge cannot honour are refused, naming the field.
  EXPECT_EQ(rejected_field(chat({{"audio", {{"voice", "alloy"}}}})), "audio");
  EXPECT_EQ(rejected_field(chat({{"modalities", {"text", "audio"}}})), "modalities");
  EXPECT_EQ(rejected_field(chat({{"functions", json::array()}})), "functions");
  EXPECT_EQ(rejected_field(chat({{"web_search_options", json::object()}})), "web_search_options");
  EXPECT_EQ(rejected_field(chat({{"temprature", 0.5}})), "temprature");  // typos are not ignored
}

TEST(ChatRequest, OutputConstraints) {
  GenerationSpec s;
  ASSERT_FALSE(parse(chat({{"response_format", {{"type", "text"}}}}), s));
  EXPECT_EQ(s.constraint.kind, OutputConstraint::Kind::kNone);
  ASSERT_FALSE(parse(chat({{"response_format", {{"type", "json_object"}}}}), s));
  EXPECT_EQ(s.constraint.kind, OutputConstraint::Kind::kJsonObject);
  const json schema = {{"type", "object"}, {"properties", {{"b", {{"type", "integer"}}},
                                                           {"a", {{"type", "string"}}}}}};
  ASSERT_FALSE(parse(chat({{"response_format", {{"type", "json_schema"},
                                                {"json_schema", {{"name", "x"},
                                                                 {"schema", schema}}}}}}),
                     s));
  EXPECT_EQ(s.constraint.kind, OutputConstraint::Kind::kJsonSchema);
  EXPECT_EQ(s.constraint.schema.dump(), schema.dump());  // property order kept
  ASSERT_FALSE(parse({{"prompt", "x"}, {"grammar", "root ::= \"a\""}}, s, Endpoint::kCompletion));
  EXPECT_EQ(s.constraint.kind, OutputConstraint::Kind::kGrammar);
  EXPECT_EQ(s.constraint.grammar, "root ::= \"a\"");
  EXPECT_EQ(rejected_field(chat({{"response_format", {{"type", "yaml"}}}})),
            "response_format.type");
  EXPECT_EQ(rejected_field(chat({{"response_format", {{"type", "json_schema"}}}})),
            "response_format.json_schema");
  EXPECT_EQ(rejected_field(chat({{"grammar", ""}})), "grammar");
  EXPECT_EQ(rejected_field(chat({{"grammar", "root ::= \"a\""},
                                 {"response_format", {{"type", "json_object"}}}})),
            "grammar");
}

}  // namespace
}  // namespace ridge::server::chat_request_test
