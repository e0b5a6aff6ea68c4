// libFuzzer target: request-supplied grammars and JSON Schemas (the `grammar` and
// `response_format` fields) must become a grammar or a Status, never a crash, hang or unbounded
// allocation; a compiled grammar then drives a matcher over a small vocabulary with control
// tokens. The first byte picks GBNF (even) or JSON Schema (odd); its bit 1 resolves token
// references against the vocabulary (otherwise only <[id]> parses); with bit 2 each '@' of the
// GBNF text becomes a token reference (chosen by the byte after it), so mutations reach them.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace {

// Token texts; the control tokens (the last four) have no bytes in the index.
std::vector<std::string> vocab_text() {
  std::vector<std::string> t;
  for (int b = 0; b < 128; ++b) t.emplace_back(1, static_cast<char>(b));
  for (const char* s : {"{\"", "\":", "true", "null", "\xc3\xa9", "\xe2\x82", "\xac", "  ", "<|",
                        "<|a|>", "<|b|>", "[C]", "<|eog|>"}) {
    t.emplace_back(s);
  }
  return t;
}

std::shared_ptr<const ridge::grammar::TokenIndex> small_vocab() {
  std::vector<std::string> bytes = vocab_text();
  const auto n = static_cast<int32_t>(bytes.size());
  for (int32_t i = n - 4; i < n; ++i) bytes[static_cast<size_t>(i)].clear();
  return std::make_shared<const ridge::grammar::TokenIndex>(std::move(bytes),
                                                            std::vector<int32_t>{0, n - 1});
}

ridge::grammar::TokenResolver resolver() {
  ridge::grammar::TokenResolver r;
  static const std::vector<std::string> text = vocab_text();
  r.n_vocab = static_cast<int32_t>(text.size());
  r.find = [](std::string_view t) -> std::optional<int32_t> {
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == t) return static_cast<int32_t>(i);
    }
    return std::nullopt;
  };
  return r;
}

std::string with_token_references(std::string_view text) {
  static const char* const kRefs[] = {"<|a|>", "!<|b|>",   "<\"[C]\">", "<|eog|>",
                                      "<[3]>", "!<[140]>", "<|nope|>",  "<[99999]>"};
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '@') {
      out += text[i];
    } else if (i + 1 < text.size()) {
      out += kRefs[static_cast<uint8_t>(text[++i]) % std::size(kRefs)];
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const auto vocab = small_vocab();
  static const ridge::grammar::TokenResolver tokens = resolver();
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string gbnf(text);
  if (data[0] & 1) {
    auto schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) return 0;
    auto g = ridge::grammar::json_schema_to_gbnf_ordered(schema);
    if (!g.ok()) return 0;
    gbnf = std::move(*g);
  } else if (data[0] & 4) {
    gbnf = with_token_references(text);
  }
  auto g = ridge::grammar::parse_gbnf(gbnf, "root", (data[0] & 2) ? &tokens : nullptr);
  if (!g.ok()) return 0;
  ridge::grammar::Matcher m(*g, vocab);
  std::vector<uint8_t> mask;
  for (size_t step = 0; step < 16; ++step) {  // an allowed token chosen by the input's bytes
    m.fill_mask(mask);
    std::vector<int32_t> allowed;
    for (size_t t = 0; t < mask.size(); ++t) {
      if (mask[t] != 0) allowed.push_back(static_cast<int32_t>(t));
    }
    if (allowed.empty()) break;
    const int32_t pick = allowed[data[step % size] % allowed.size()];
    if (!m.accept_token(pick).ok()) __builtin_trap();  // the mask allowed it
    if (m.finished()) break;
  }
  return 0;
}
