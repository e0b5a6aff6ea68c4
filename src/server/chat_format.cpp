#include "server/chat_format.h"

namespace ridge::server {

tokenizer::MarkedText render_chatml(const std::vector<ChatMessage>& messages) {
  tokenizer::MarkedText out;
  for (const auto& m : messages) {
    out.append_markup("<|im_start|>");
    out.append_literal(m.role == "developer" ? "system" : m.role);
    out.append_markup("\n");
    out.append_literal(m.content);
    out.append_markup("<|im_end|>\n");
  }
  out.append_markup("<|im_start|>assistant\n");
  return out;
}

}  // namespace ridge::server
