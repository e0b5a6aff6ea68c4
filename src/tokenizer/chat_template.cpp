#include "tokenizer/chat_template.h"

#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace ridge::tokenizer {

namespace {

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Roles are literal too: they come from the same request as the content.
void render_chatml(std::span<const ChatMessage> msgs, bool add_gen, MarkedText* out) {
  for (const auto& m : msgs) {
    out->append_markup("<|im_start|>");
    out->append_literal(m.role);
    out->append_markup("\n");
    out->append_literal(m.content);
    out->append_markup("<|im_end|>\n");
  }
  if (add_gen) out->append_markup("<|im_start|>assistant\n");
}

void render_llama3(std::span<const ChatMessage> msgs, bool add_gen, MarkedText* out) {
  for (const auto& m : msgs) {
    out->append_markup("<|start_header_id|>");
    out->append_literal(m.role);
    out->append_markup("<|end_header_id|>\n\n");
    out->append_literal(trim(m.content));
    out->append_markup("<|eot_id|>");
  }
  if (add_gen) out->append_markup("<|start_header_id|>assistant<|end_header_id|>\n\n");
}

void render_plain(std::span<const ChatMessage> msgs, bool add_gen, MarkedText* out) {
  for (const auto& m : msgs) {
    out->append_literal(m.role);
    out->append_markup(": ");
    out->append_literal(m.content);
    out->append_markup("\n\n");
  }
  if (add_gen) out->append_markup("assistant: ");
}

}  // namespace

ChatTemplate ChatTemplate::detect(std::string_view jinja) {
  ChatTemplate t;
  const std::string_view name = trim(jinja);
  if (name == "chatml" || contains(jinja, "<|im_start|>")) {
    t.style_ = ChatStyle::kChatml;
  } else if (name == "llama3" || contains(jinja, "<|start_header_id|>")) {
    t.style_ = ChatStyle::kLlama3;
  } else if (name == "llama2" || contains(jinja, "[INST]")) {
    t.style_ = ChatStyle::kLlama2;
    if (name != "llama2") {
      t.llama2_system_ = contains(jinja, "<<SYS>>");
      t.llama2_bos_inside_ = contains(jinja, "bos_token + '[INST]");
      t.llama2_strip_ = contains(jinja, "content.strip()");
    }
  }
  return t;
}

ChatTemplate ChatTemplate::from_gguf(const gguf::File& file, const Tokenizer* tok) {
  auto jinja = file.get_string_or("tokenizer.chat_template", "");
  if (jinja.ok() && !jinja->empty()) return detect(*jinja);
  if (tok != nullptr) {
    if (tok->find_token("<|im_start|>") >= 0) return detect("chatml");
    if (tok->find_token("<|start_header_id|>") >= 0) return detect("llama3");
  }
  return ChatTemplate();
}

Result<ChatTemplate> ChatTemplate::from_name(std::string_view name) {
  if (name == "plain") return ChatTemplate();
  ChatTemplate t = detect(name);
  if (!t.recognised() || (name != "chatml" && name != "llama3" && name != "llama2")) {
    return usage_error("unknown chat template '{}' (use chatml, llama3, llama2 or plain)", name);
  }
  return t;
}

std::string_view ChatTemplate::name() const {
  switch (style_) {
    case ChatStyle::kChatml: return "chatml";
    case ChatStyle::kLlama3: return "llama3";
    case ChatStyle::kLlama2: return "llama2";
    case ChatStyle::kPlain: break;
  }
  return "plain";
}

MarkedText ChatTemplate::render(std::span<const ChatMessage> msgs, bool add_generation_prompt) const {
  MarkedText out;
  switch (style_) {
    case ChatStyle::kChatml: render_chatml(msgs, add_generation_prompt, &out); break;
    case ChatStyle::kLlama3: render_llama3(msgs, add_generation_prompt, &out); break;
    case ChatStyle::kPlain: render_plain(msgs, add_generation_prompt, &out); break;
    case ChatStyle::kLlama2: {
      // One [INST] block per user turn; the answer closes it with </s>. The prompt always ends
      // after [/INST], so add_generation_prompt changes nothing.
      bool inside_turn = true;  // the first [INST] follows BOS, added by the tokenizer
      out.append_markup("[INST] ");
      for (const auto& m : msgs) {
        const std::string_view content = llama2_strip_ ? trim(m.content) : std::string_view(m.content);
        if (!inside_turn) {
          inside_turn = true;
          out.append_markup(llama2_bos_inside_ ? "<s>[INST] " : "[INST] ");
        }
        if (m.role == "system") {
          if (llama2_system_) out.append_markup("<<SYS>>\n");
          out.append_literal(content);
          out.append_markup(llama2_system_ ? "\n<</SYS>>\n\n" : "\n");
        } else if (m.role == "user") {
          out.append_literal(content);
          out.append_markup(" [/INST]");
        } else {
          out.append_literal(content);
          out.append_markup("</s>");
          inside_turn = false;
        }
      }
      break;
    }
  }
  return out;
}

}  // namespace ridge::tokenizer
