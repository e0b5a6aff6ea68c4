// Helpers of the output parser's tests: streaming a text in pieces and checking that the deltas
// add up to parse_output of the whole text.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
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
  for (size_t i = 0; i < r.tool_calls.size() && i < acc.tool_calls.size(); ++i) {
    EXPECT_EQ(r.tool_calls[i].id, acc.tool_calls[i].id);
    EXPECT_EQ(r.tool_calls[i].name, acc.tool_calls[i].name);
    EXPECT_EQ(r.tool_calls[i].arguments, acc.tool_calls[i].arguments) << "fragments add up";
  }
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

// How one call arrives when a text is fed one UTF-8 character at a time.
struct CallTrace {
  std::string name;
  size_t name_at = std::string_view::npos;  // text fed (bytes) when the name delta came
  size_t last_at = 0;                       // text fed when its last fragment came
  size_t fragment_deltas = 0;               // deltas (push or finish) with a fragment of it
  std::string arguments;                    // the fragments joined
};

inline std::vector<CallTrace> trace_calls(std::string_view text, ParserOptions opts) {
  if (opts.id_seed == 0) opts.id_seed = 1234;
  OutputParser p(opts);
  std::vector<CallTrace> calls;
  auto take = [&](const OutputDelta& d, size_t fed) {
    std::vector<size_t> with_fragment;  // calls this delta has fragments of
    for (const ToolCallDelta& t : d.tool_calls) {
      const auto i = static_cast<size_t>(t.index);
      if (i == calls.size()) calls.push_back({t.name, fed, fed, 0, ""});
      if (i >= calls.size() || t.arguments_fragment.empty()) continue;
      if (std::find(with_fragment.begin(), with_fragment.end(), i) == with_fragment.end()) {
        with_fragment.push_back(i);
        ++calls[i].fragment_deltas;
      }
      calls[i].last_at = fed;
      calls[i].arguments += t.arguments_fragment;
    }
  };
  size_t prev = 0;
  for (size_t c : utf8_boundaries(text)) {
    take(p.push(text.substr(prev, c - prev)), c);
    prev = c;
  }
  take(p.push(text.substr(prev)), text.size());
  take(p.finish(), text.size() + 1);  // finish: after everything
  return calls;
}

// Incremental streaming of call `i` of `text`: its name delta comes before `before` bytes are fed
// (the end of its block), its arguments come in several deltas, add up to the result's and equal
// `expected` as JSON.
inline void expect_incremental(std::string_view text, const ParserOptions& opts, size_t i,
                               size_t before, const nlohmann::json& expected,
                               size_t min_fragment_deltas = 2) {
  const std::vector<CallTrace> calls = trace_calls(text, opts);
  ASSERT_LT(i, calls.size()) << text;
  const CallTrace& c = calls[i];
  EXPECT_LT(c.name_at, before) << "the name is sent before the block ends: " << text;
  EXPECT_GE(c.fragment_deltas, min_fragment_deltas) << "arguments in fragments: " << text;
  ParserOptions o = opts;
  if (o.id_seed == 0) o.id_seed = 1234;
  const ParsedOutput whole = parse_output(text, o);
  ASSERT_LT(i, whole.tool_calls.size());
  EXPECT_EQ(c.name, whole.tool_calls[i].name);
  EXPECT_EQ(c.arguments, whole.tool_calls[i].arguments);
  const auto j = nlohmann::json::parse(c.arguments, nullptr, false);
  EXPECT_EQ(j, expected) << c.arguments;
  check_streaming(text, opts, 10);
}

// Arguments compared as JSON values.
inline void expect_args(const std::string& actual, const nlohmann::json& expected) {
  const auto j = nlohmann::json::parse(actual, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << actual;
  EXPECT_EQ(j, expected) << actual;
}

}  // namespace ridge::chat::testing
