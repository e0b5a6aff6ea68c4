#include "server/chat_format.h"

namespace ridge::server {

std::string render_chatml(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const auto& m : messages) {
    out += "<|im_start|>";
    out += m.role == "developer" ? "system" : m.role;
    out += "\n" + m.content + "<|im_end|>\n";
  }
  out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace ridge::server
