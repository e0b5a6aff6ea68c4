#include "chat/output_format.h"

#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

bool has(std::string_view s, std::string_view marker) {
  return s.find(marker) != std::string_view::npos;
}

}  // namespace

std::string_view output_format_name(OutputFormat f) {
  switch (f) {
    case OutputFormat::kContentOnly: return "content-only";
    case OutputFormat::kHermes: return "hermes";
    case OutputFormat::kQwenXml: return "qwen-xml";
    case OutputFormat::kLlama3Json: return "llama3-json";
    case OutputFormat::kMistralNemo: return "mistral-nemo";
    case OutputFormat::kMistralSmall: return "mistral-small";
    case OutputFormat::kHarmony: return "harmony";
    case OutputFormat::kDeepSeekR1: return "deepseek-r1";
    case OutputFormat::kGemma4: return "gemma4";
  }
  return "unknown";
}

FormatInfo detect_output_format(std::string_view src) {
  FormatInfo info;
  if (has(src, "<|channel|>") && has(src, "<|message|>")) {
    info.tools = OutputFormat::kHarmony;  // reasoning is the analysis channel, not tags
    return info;
  }
  if (has(src, "<|tool_call>") || has(src, "<|channel>thought")) {
    info.tools = has(src, "<|tool_call>") ? OutputFormat::kGemma4 : OutputFormat::kContentOnly;
    info.think_tags = has(src, "<|channel>thought");
    return info;
  }
  info.think_tags = has(src, "<think>") && has(src, "</think>");
  if (has(src, "<｜tool▁calls▁begin｜>")) {
    info.tools = OutputFormat::kDeepSeekR1;
  } else if (has(src, "[TOOL_CALLS]")) {
    info.tools = has(src, "[ARGS]") ? OutputFormat::kMistralSmall : OutputFormat::kMistralNemo;
  } else if (has(src, "<tool_call>")) {
    info.tools = has(src, "<function=") ? OutputFormat::kQwenXml : OutputFormat::kHermes;
  } else if (has(src, "<|start_header_id|>") && has(src, "\"parameters\"")) {
    info.tools = OutputFormat::kLlama3Json;
  }
  // The DeepSeek-R1 distill template opens <think> in its generation prompt only.
  if (info.tools == OutputFormat::kDeepSeekR1 && has(src, "<think>")) info.think_tags = true;
  return info;
}

bool prompt_ends_in_reasoning(std::string_view prompt, const FormatInfo& format) {
  if (!format.think_tags) return false;
  const ReasoningTags tags = reasoning_tags(format);
  const size_t open = prompt.rfind(tags.open);
  if (open == std::string_view::npos) return false;
  const size_t close = prompt.rfind(tags.close);
  if (close != std::string_view::npos && close > open) return false;
  for (char c : prompt.substr(open + tags.open.size())) {
    if (!is_space(c)) return false;
  }
  return true;
}

}  // namespace ridge::chat
