// Rendering chat messages into a prompt when the model's own template cannot be used: ChatML
// (<|im_start|>role\ncontent<|im_end|>\n ... <|im_start|>assistant\n), the format llama.cpp also
// falls back to. The CLI prefers the tokenizer module's renderer of the GGUF template.
// Roles and contents are marked literal: only the markers may become control tokens.
#pragma once

#include <vector>

#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace ridge::server {

tokenizer::MarkedText render_chatml(const std::vector<ChatMessage>& messages);

}  // namespace ridge::server
