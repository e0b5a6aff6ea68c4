// Helpers of the output parser's tests: streaming a text in pieces and checking that the deltas
// add up to parse_output of the whole text.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "chat/output_parser.h"

namespace ridge::chat::testing {

// Byte offsets where a UTF-8 text may be cut (character boundaries).
inline std::vector<size_t> utf8_boundaries(std::string_view s) {
  std::vector<size_t> b;
  for (size_t i = 1; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) b.push_back(i);
  }
  return b;
}

// Streams `text` cut at `cuts` (sorted offsets); returns the concatenated deltas and checks the
// OpenAI delta rules on the way (a call's first delta names it, indices in order).
inline ParsedOutput stream(std::string_view text, const std::vector<size_t>& cuts,
                           const ParserOptions& opts) {
  OutputParser p(opts);
  ParsedOutput acc;
  auto take = [&](const OutputDelta& d) {
    acc.content += d.content;
    acc.reasoning_content += d.reasoning_content;
    for (const ToolCallDelta& t : d.tool_calls) {
      if (t.index == static_cast<int>(acc.tool_calls.size())) {
        EXPECT_FALSE(t.id.empty());
        EXPECT_FALSE(t.name.empty());
        acc.tool_calls.push_back({t.id, t.name, ""});
      } else {
        EXPECT_GE(t.index, 0);
        EXPECT_LT(t.index, static_cast<int>(acc.tool_calls.size()));
        EXPECT_TRUE(t.id.empty() && t.name.empty()) << "only a call's first delta names it";
        if (t.index < 0 || t.index >= static_cast<int>(acc.tool_calls.size())) continue;
      }
      acc.tool_calls[static_cast<size_t>(t.index)].arguments += t.arguments_fragment;
    }
  };
  size_t prev = 0;
  for (size_t c : cuts) {
    take(p.push(text.substr(prev, c - prev)));
    prev = c;
  }
  take(p.push(text.substr(prev)));
  take(p.finish());
  const ParsedOutput& r = p.result();
  EXPECT_EQ(r.content, acc.content);
  EXPECT_EQ(r.reasoning_content, acc.reasoning_content);
  EXPECT_EQ(r.tool_calls.size(), acc.tool_calls.size());
  return acc;
}

inline void expect_same(const ParsedOutput& a, const ParsedOutput& b, const std::string& what) {
  EXPECT_EQ(a.content, b.content) << what;
  EXPECT_EQ(a.reasoning_content, b.reasoning_content) << what;
  ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size()) << what;
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    EXPECT_EQ(a.tool_calls[i].name, b.tool_calls[i].name) << what;
    EXPECT_EQ(a.tool_calls[i].arguments, b.tool_calls[i].arguments) << what;
    EXPECT_EQ(a.tool_calls[i].id, b.tool_calls[i].id) << what;  // same id seed
  }
}

// The streaming invariant: for random cuts and byte by byte (at UTF-8 boundaries), the deltas add
// up to parse_output of the whole text. Returns parse_output's result.
inline ParsedOutput check_streaming(std::string_view text, ParserOptions opts,
                                    int random_splits = 30) {
  if (opts.id_seed == 0) opts.id_seed = 1234;
  const ParsedOutput whole = parse_output(text, opts);
  for (const auto& c : whole.tool_calls) {
    const auto j = nlohmann::json::parse(c.arguments, nullptr, false);
    EXPECT_TRUE(j.is_object()) << "arguments must be a JSON object: " << c.arguments;
  }
  const std::vector<size_t> all = utf8_boundaries(text);
  expect_same(stream(text, all, opts), whole, "byte by byte");
  expect_same(stream(text, {}, opts), whole, "one piece");
  std::mt19937 rng(static_cast<unsigned>(text.size()) * 7919u + 17u);
  for (int k = 0; k < random_splits && !all.empty(); ++k) {
    std::vector<size_t> cuts;
    const double p = std::uniform_real_distribution<double>(0.02, 0.5)(rng);
    for (size_t b : all) {
      if (std::bernoulli_distribution(p)(rng)) cuts.push_back(b);
    }
    expect_same(stream(text, cuts, opts), whole, "random cuts #" + std::to_string(k));
    if (::testing::Test::HasFailure()) break;
  }
  return whole;
}

// Arguments compared as JSON values.
inline void expect_args(const std::string& actual, const nlohmann::json& expected) {
  const auto j = nlohmann::json::parse(actual, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << actual;
  EXPECT_EQ(j, expected) << actual;
}

}  // namespace ridge::chat::testing
