// Request parsing: accepted shapes, OpenAI defaults, and 400s that name the offending field.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace ridge::server::openai_request_test {
namespace {

using json = nlohmann::ordered_json;

std::optional<ApiError> parse(const json& body, Endpoint ep, GenerationSpec& out) {
  return parse_generation_request(body, ep, RequestLimits{}, 1234, out);
}

json chat(json extra = json::object()) {
  json j = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}

// The field a request is rejected for, or "" when it is accepted.
std::string rejected_field(const json& body, Endpoint ep = Endpoint::kChat) {
  GenerationSpec s;
  auto e = parse(body, ep, s);
  if (!e) return "";
  EXPECT_EQ(e->status, 400);
  EXPECT_FALSE(e->message.empty());
  return e->param.empty() ? "<none>" : e->param;
}

TEST(OpenAiRequest, ChatDefaultsAreOpenAis) {
  GenerationSpec s;
  ASSERT_FALSE(parse(chat(), Endpoint::kChat, s));
  const auto& msgs = s.chat.conversation.messages;
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0]["role"], "user");
  EXPECT_EQ(msgs[0]["content"], "hi");
  EXPECT_EQ(s.params.temperature, 1.0f);
  EXPECT_EQ(s.params.top_p, 1.0f);
  EXPECT_EQ(s.params.top_k, 0);
  EXPECT_EQ(s.params.min_p, 0.0f);
  EXPECT_EQ(s.params.max_tokens, -1);
  EXPECT_EQ(s.params.seed, 1234u);
  EXPECT_EQ(s.n, 1);
  EXPECT_FALSE(s.stream);
  EXPECT_EQ(s.n_logprobs, -1);
}

TEST(OpenAiRequest, ChatFieldsAreRead) {
  GenerationSpec s;
  json j = chat({{"temperature", 0.5}, {"top_p", 0.9}, {"top_k", 7}, {"min_p", 0.1},
                 {"seed", 42}, {"stop", {"a", "bc"}}, {"n", 3}, {"presence_penalty", 0.5},
                 {"frequency_penalty", -0.5}, {"logit_bias", {{"17", -100}, {"3", 2.5}}},
                 {"logprobs", true}, {"top_logprobs", 4}, {"user", "u1"},
                 {"max_completion_tokens", 9}, {"stream", true},
                 {"stream_options", {{"include_usage", true}}}});
  j["messages"] = {{{"role", "system"}, {"content", "be brief"}},
                   {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "a"}},
                                                   {{"type", "text"}, {"text", "b"}}}}},
                   {{"role", "assistant"}, {"content", nullptr}}};
  ASSERT_FALSE(parse(j, Endpoint::kChat, s));
  EXPECT_EQ(s.chat.conversation.messages[1]["content"], "a\nb");  // parts joined as vLLM does
  EXPECT_EQ(s.chat.conversation.messages[2]["content"], "");
  EXPECT_FLOAT_EQ(s.params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(s.params.top_p, 0.9f);
  EXPECT_EQ(s.params.top_k, 7);
  EXPECT_EQ(s.params.seed, 42u);
  EXPECT_EQ(s.params.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(s.n, 3);
  EXPECT_FLOAT_EQ(s.params.frequency_penalty, -0.5f);
  ASSERT_EQ(s.params.logit_bias.size(), 2u);
  EXPECT_EQ(s.n_logprobs, 4);
  EXPECT_EQ(s.params.max_tokens, 9);
  EXPECT_TRUE(s.stream);
  EXPECT_TRUE(s.include_usage);
  EXPECT_EQ(s.user, "u1");
}

TEST(OpenAiRequest, CompletionPrompts) {
  GenerationSpec s;
  ASSERT_FALSE(parse({{"prompt", "Once"}, {"max_tokens", 5}, {"echo", true}, {"logprobs", 2}},
                     Endpoint::kCompletion, s));
  EXPECT_EQ(s.prompt_text, "Once");
  EXPECT_TRUE(s.echo);
  EXPECT_EQ(s.n_logprobs, 2);
  ASSERT_FALSE(parse({{"prompt", {"Once"}}}, Endpoint::kCompletion, s));
  EXPECT_EQ(s.prompt_text, "Once");
  ASSERT_FALSE(parse({{"prompt", {1, 2, 3}}}, Endpoint::kCompletion, s));
  EXPECT_TRUE(s.prompt_is_tokens);
  EXPECT_EQ(s.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_FALSE(parse({{"prompt", "x"}, {"stop", "\n"}}, Endpoint::kCompletion, s));
  EXPECT_EQ(s.params.stop, (std::vector<std::string>{"\n"}));
}

TEST(OpenAiRequest, BadValuesNameTheirField) {
  EXPECT_EQ(rejected_field(chat({{"temperature", 2.5}})), "temperature");
  EXPECT_EQ(rejected_field(chat({{"temperature", "hot"}})), "temperature");
  EXPECT_EQ(rejected_field(chat({{"top_p", 0}})), "top_p");
  EXPECT_EQ(rejected_field(chat({{"top_p", 1.01}})), "top_p");
  EXPECT_EQ(rejected_field(chat({{"min_p", -0.1}})), "min_p");
  EXPECT_EQ(rejected_field(chat({{"top_k", -1}})), "top_k");
  EXPECT_EQ(rejected_field(chat({{"top_k", 1.5}})), "top_k");
  EXPECT_EQ(rejected_field(chat({{"presence_penalty", 3}})), "presence_penalty");
  EXPECT_EQ(rejected_field(chat({{"frequency_penalty", -2.5}})), "frequency_penalty");
  EXPECT_EQ(rejected_field(chat({{"max_tokens", 0}})), "max_tokens");
  EXPECT_EQ(rejected_field(chat({{"max_tokens", "10"}})), "max_tokens");
  EXPECT_EQ(rejected_field(chat({{"max_completion_tokens", -3}})), "max_completion_tokens");
  EXPECT_EQ(rejected_field(chat({{"n", 0}})), "n");
  EXPECT_EQ(rejected_field(chat({{"n", 1000}})), "n");
  EXPECT_EQ(rejected_field(chat({{"seed", 1.5}})), "seed");
  EXPECT_EQ(rejected_field(chat({{"stop", ""}})), "stop");
  EXPECT_EQ(rejected_field(chat({{"stop", {"a", 1}}})), "stop");
  EXPECT_EQ(rejected_field(chat({{"stop", {"a", "b", "c", "d", "e"}}})), "stop");
  EXPECT_EQ(rejected_field(chat({{"logit_bias", {{"x", 1}}}})), "logit_bias");
  EXPECT_EQ(rejected_field(chat({{"logit_bias", {{"5", 101}}}})), "logit_bias");
  EXPECT_EQ(rejected_field(chat({{"logprobs", 3}})), "logprobs");
  EXPECT_EQ(rejected_field(chat({{"top_logprobs", 2}})), "top_logprobs");
  EXPECT_EQ(rejected_field(chat({{"logprobs", true}, {"top_logprobs", 21}})), "top_logprobs");
  EXPECT_EQ(rejected_field(chat({{"stream", "yes"}})), "stream");
  EXPECT_EQ(rejected_field(chat({{"stream_options", {{"include_usage", true}}}})), "stream_options");
  EXPECT_EQ(rejected_field(chat({{"model", 3}})), "model");
  EXPECT_EQ(rejected_field(chat({{"user", 3}})), "user");
}

TEST(OpenAiRequest, UnknownFieldsAndBadMessages) {
  EXPECT_EQ(rejected_field(chat({{"tools", "x"}})), "tools");
  EXPECT_EQ(rejected_field(chat({{"bogus", 1}})), "bogus");
  EXPECT_EQ(rejected_field({{"model", "m"}}), "messages");
  EXPECT_EQ(rejected_field({{"messages", json::array()}}), "messages");
  EXPECT_EQ(rejected_field({{"messages", "hi"}}), "messages");
  EXPECT_EQ(rejected_field({{"messages", {1}}}), "messages[0]");
  EXPECT_EQ(rejected_field({{"messages", {{{"role", "robot"}, {"content", "x"}}}}}),
            "messages[0].role");
  EXPECT_EQ(rejected_field({{"messages", {{{"content", "x"}}}}}), "messages[0].role");
  EXPECT_EQ(rejected_field({{"messages", {{{"role", "user"}}}}}), "messages[0].content");
  EXPECT_EQ(rejected_field({{"messages", {{{"role", "user"}, {"content", 5}}}}}),
            "messages[0].content");
  EXPECT_EQ(rejected_field({{"messages", {{{"role", "user"}, {"content",
                                             {{{"type", "image_url"}}}}}}}}),
            "messages[0].content[0].type");
  // Completion-only fields are unknown to chat and the reverse.
  EXPECT_EQ(rejected_field(chat({{"echo", true}})), "echo");
  EXPECT_EQ(rejected_field({{"prompt", "x"}, {"messages", json::array()}}, Endpoint::kCompletion),
            "messages");
  EXPECT_EQ(rejected_field({{"max_tokens", 3}}, Endpoint::kCompletion), "prompt");
  EXPECT_EQ(rejected_field({{"prompt", {"a", "b"}}}, Endpoint::kCompletion), "prompt");
  EXPECT_EQ(rejected_field({{"prompt", json::array()}}, Endpoint::kCompletion), "prompt");
  EXPECT_EQ(rejected_field({{"prompt", {1, -2}}}, Endpoint::kCompletion), "prompt");
  EXPECT_EQ(rejected_field({{"prompt", "x"}, {"best_of", 2}}, Endpoint::kCompletion), "best_of");
  EXPECT_EQ(rejected_field({{"prompt", "x"}, {"logprobs", true}}, Endpoint::kCompletion),
            "logprobs");
}

TEST(OpenAiRequest, NullMeansAbsent) {
  GenerationSpec s;
  ASSERT_FALSE(parse(chat({{"temperature", nullptr}, {"stop", nullptr}, {"n", nullptr},
                           {"max_tokens", nullptr}}),
                     Endpoint::kChat, s));
  EXPECT_EQ(s.params.temperature, 1.0f);
  EXPECT_EQ(s.n, 1);
  EXPECT_TRUE(s.params.stop.empty());
}

TEST(OpenAiRequest, MalformedJson) {
  json j;
  auto e = parse_json_object("{\"model\": ", j);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_NE(e->message.find("not valid JSON"), std::string::npos);
  e = parse_json_object("[1, 2]", j);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("JSON object"), std::string::npos);
  EXPECT_FALSE(parse_json_object("{}", j));
}

TEST(ApiErrorTest, OpenAiShape) {
  const json j = invalid_param("top_p", "bad").to_json();
  EXPECT_EQ(j["error"]["message"], "bad");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "top_p");
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_EQ(too_many_requests("x").status, 429);
  EXPECT_EQ(unauthorized("x").status, 401);
  EXPECT_EQ(payload_too_large("x").status, 413);
}

}  // namespace
}  // namespace ridge::server::openai_request_test
