// The parser against the models' own chat templates: tests/chat/output_cases.py renders an
// assistant turn with known reasoning, content and tool calls through each template in
// RIDGE_SHARED_DIR/templates (Python's jinja2, Hugging Face's conventions); the text after the
// generation prompt is what the model writes, and parsing it must give the message back.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/wait.h>

#include "chat/output_test_util.h"


namespace ridge::chat {
namespace {

const char* const kTemplates = RIDGE_SHARED_DIR "/templates";
const char* const kScript = RIDGE_SOURCE_DIR "/tests/chat/output_cases.py";

OutputFormat format_by_name(const std::string& n) {
  static const std::pair<const char*, OutputFormat> kNames[] = {
      {"kContentOnly", OutputFormat::kContentOnly}, {"kHermes", OutputFormat::kHermes},
      {"kQwenXml", OutputFormat::kQwenXml},         {"kLlama3Json", OutputFormat::kLlama3Json},
      {"kMistralNemo", OutputFormat::kMistralNemo}, {"kMistralSmall", OutputFormat::kMistralSmall},
      {"kHarmony", OutputFormat::kHarmony},         {"kDeepSeekR1", OutputFormat::kDeepSeekR1},
      {"kGemma4", OutputFormat::kGemma4}};
  for (const auto& [name, f] : kNames) {
    if (n == name) return f;
  }
  ADD_FAILURE() << "unknown format " << n;
  return OutputFormat::kContentOnly;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The cases as JSON, or a reason to skip.
bool load_cases(nlohmann::json& cases, std::string& why) {
  if (!std::filesystem::is_directory(kTemplates)) {
    why = std::string("no templates at ") + kTemplates;
    return false;
  }
  const std::string cmd = std::string("/usr/bin/python3 '") + kScript + "' '" + kTemplates + "'";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    why = "cannot run /usr/bin/python3";
    return false;
  }
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
    why = "Python's jinja2 is not installed (apt-get install python3-jinja2)";
    return false;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ADD_FAILURE() << cmd << " failed with status " << status;
    return false;
  }
  cases = nlohmann::json::parse(out, nullptr, false);
  if (!cases.is_array() || cases.empty()) {
    ADD_FAILURE() << "no cases from " << cmd;
    return false;
  }
  return true;
}

TEST(OutputTemplates, EveryTemplateRoundTrips) {
  nlohmann::json cases;
  std::string why;
  if (!load_cases(cases, why)) {
    if (!HasFailure()) GTEST_SKIP() << why;
    return;
  }
  std::map<std::string, int> per_template;
  for (const auto& c : cases) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const std::string source = read_file(std::filesystem::path(kTemplates) /
                                         c["template"].get<std::string>());
    const FormatInfo fmt = detect_output_format(source);
    EXPECT_EQ(output_format_name(fmt.tools),
              output_format_name(format_by_name(c["format"].get<std::string>())));
    EXPECT_EQ(fmt.think_tags, c["think_tags"].get<bool>());
    const std::string prompt = c["prompt"];
    EXPECT_EQ(prompt_ends_in_reasoning(prompt, fmt), c["starts_in_reasoning"].get<bool>());

    ParserOptions opts;
    opts.format = fmt;
    opts.starts_in_reasoning = c["starts_in_reasoning"];
    opts.tools = c["tools"];
    const std::string text = c["text"];
    const ParsedOutput r = testing::check_streaming(text, opts, 10);
    const auto& e = c["expected"];
    EXPECT_EQ(r.content, e["content"].get<std::string>()) << text;
    EXPECT_EQ(r.reasoning_content, e["reasoning_content"].get<std::string>()) << text;
    ASSERT_EQ(r.tool_calls.size(), e["tool_calls"].size()) << text;
    for (size_t i = 0; i < r.tool_calls.size(); ++i) {
      const auto& ec = e["tool_calls"][i];
      EXPECT_EQ(r.tool_calls[i].name, ec["name"].get<std::string>());
      testing::expect_args(r.tool_calls[i].arguments, ec["arguments"]);
      if (ec.contains("id") && fmt.tools == OutputFormat::kMistralNemo) {
        // Nemo's template writes the id after the arguments, after the call's first delta: a
        // new 9-character id is used.
        EXPECT_EQ(r.tool_calls[i].id.size(), 9u);
      } else if (ec.contains("id")) {
        EXPECT_EQ(r.tool_calls[i].id, ec["id"].get<std::string>());
      } else {
        EXPECT_TRUE(r.tool_calls[i].id.starts_with("call_")) << r.tool_calls[i].id;
        EXPECT_EQ(r.tool_calls[i].id.size(), 29u);
      }
    }
    ++per_template[c["template"].get<std::string>()];
  }
  // Every template of the directory produced cases.
  size_t templates = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kTemplates)) {
    if (entry.path().extension() == ".jinja") {
      ++templates;
      EXPECT_GT(per_template[entry.path().filename().string()], 0) << entry.path();
    }
  }
  EXPECT_EQ(per_template.size(), templates);
}

// Parsing is not a no-op that happens to match: the same texts with tools off are all content.
TEST(OutputTemplates, ToolCallTextStaysContentWithoutTools) {
  nlohmann::json cases;
  std::string why;
  if (!load_cases(cases, why)) {
    if (!HasFailure()) GTEST_SKIP() << why;
    return;
  }
  for (const auto& c : cases) {
    if (c["expected"]["tool_calls"].empty()) continue;
    SCOPED_TRACE(c["name"].get<std::string>());
    ParserOptions opts;
    opts.format = detect_output_format(read_file(std::filesystem::path(kTemplates) /
                                                 c["template"].get<std::string>()));
    opts.starts_in_reasoning = c["starts_in_reasoning"];
    opts.parse_tools = false;
    const ParsedOutput r = testing::check_streaming(c["text"].get<std::string>(), opts, 3);
    EXPECT_TRUE(r.tool_calls.empty());
    EXPECT_FALSE(r.content.empty());
  }
}

// Every prefix of every case (generation cut anywhere: unfinished calls, half markers, truncated
// reasoning) keeps the streaming invariant and valid arguments.
TEST(OutputTemplates, TruncatedOutputsStreamConsistently) {
  nlohmann::json cases;
  std::string why;
  if (!load_cases(cases, why)) {
    if (!HasFailure()) GTEST_SKIP() << why;
    return;
  }
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    ParserOptions opts;
    opts.format = detect_output_format(read_file(std::filesystem::path(kTemplates) /
                                                 c["template"].get<std::string>()));
    opts.starts_in_reasoning = c["starts_in_reasoning"];
    opts.tools = c["tools"];
    const std::string text = c["text"];
    const std::vector<size_t> cuts = testing::utf8_boundaries(text);
    for (size_t i = 0; i < cuts.size(); i += 1 + cuts.size() / 24) {
      testing::check_streaming(std::string_view(text).substr(0, cuts[i]), opts, 2);
      if (HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace ridge::chat
