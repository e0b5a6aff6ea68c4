// Which output syntax a chat model writes for reasoning and tool calls, recognised from its chat
// template's markers (docs/chat_output.md lists the families).
#pragma once

#include <string_view>

namespace ridge::chat {

enum class OutputFormat {
  kContentOnly,   // no tool-call syntax known: everything is content
  kHermes,        // <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
  kQwenXml,       // <tool_call>\n<function=NAME>\n<parameter=P>\nV\n</parameter>\n...
                  // </function>\n</tool_call>
  kLlama3Json,    // {"name": ..., "parameters": {...}} (and <|python_tag|> for built-in tools)
  kMistralNemo,   // [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": "..."}]
  kMistralSmall,  // [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...} (CALL_ID optional)
  kHarmony,       // gpt-oss channels: analysis / commentary to=functions.NAME / final
  kDeepSeekR1,    // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json...
  kGemma4,        // <|tool_call>call:NAME{key:<|"|>v<|"|>,...}<tool_call|>
};

struct FormatInfo {
  OutputFormat tools = OutputFormat::kContentOnly;
  bool think_tags = false;  // the family writes <think>...</think> reasoning (Gemma 4: its
                            // <|channel>thought ... <channel|>)
};

std::string_view output_format_name(OutputFormat f);

// From the template source (tokenizer.chat_template) by its markers.
FormatInfo detect_output_format(std::string_view template_source);

// True when a rendered prompt ends inside an opened reasoning block: its last reasoning open tag
// comes after its last close tag and only whitespace follows it (QwQ, DeepSeek-R1, Qwen3.5 with
// thinking). The value for ParserOptions::starts_in_reasoning.
bool prompt_ends_in_reasoning(std::string_view rendered_prompt, const FormatInfo& format);

}  // namespace ridge::chat
