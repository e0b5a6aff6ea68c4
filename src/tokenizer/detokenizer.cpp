// IncrementalDetokenizer: streams token pieces as text that is always valid UTF-8.
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace ridge::tokenizer {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
}

std::string IncrementalDetokenizer::push(TokenId id) {
  pending_ += tok_->token_to_piece(id);
  std::string out;
  std::string_view rest = pending_;
  while (!rest.empty()) {
    const Utf8Prefix p = scan_utf8(rest);
    out.append(rest.substr(0, p.valid_len));
    if (p.invalid_len > 0) {  // can never become valid: replace it now
      out.append(kReplacement);
      rest.remove_prefix(p.valid_len + p.invalid_len);
      continue;
    }
    rest.remove_prefix(p.valid_len);  // what is left (if anything) is an incomplete sequence
    break;
  }
  pending_.assign(rest);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out;
  if (!pending_.empty()) out.append(kReplacement);  // at most one incomplete sequence is held
  pending_.clear();
  return out;
}

}  // namespace ridge::tokenizer
