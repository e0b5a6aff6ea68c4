// libFuzzer target: request-supplied grammars and JSON Schemas (the `grammar` and
// `response_format` fields) must become a grammar or a Status, never a crash, hang or unbounded
// allocation; a compiled grammar then drives a matcher over a small vocabulary. The first byte
// picks GBNF (even) or JSON Schema (odd).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace {

std::shared_ptr<const ridge::grammar::TokenIndex> small_vocab() {
  std::vector<std::string> bytes;
  for (int b = 0; b < 128; ++b) bytes.emplace_back(1, static_cast<char>(b));
  for (const char* t : {"{\"", "\":", "true", "null", "\xc3\xa9", "\xe2\x82", "\xac", "  "}) {
    bytes.emplace_back(t);
  }
  return std::make_shared<const ridge::grammar::TokenIndex>(std::move(bytes),
                                                            std::vector<int32_t>{0});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const auto vocab = small_vocab();
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string gbnf(text);
  if (data[0] & 1) {
    auto schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) return 0;
    auto g = ridge::grammar::json_schema_to_gbnf_ordered(schema);
    if (!g.ok()) return 0;
    gbnf = std::move(*g);
  }
  auto g = ridge::grammar::parse_gbnf(gbnf);
  if (!g.ok()) return 0;
  ridge::grammar::Matcher m(*g, vocab);
  std::vector<uint8_t> mask;
  for (int step = 0; step < 16; ++step) {  // follow the first allowed token each time
    m.fill_mask(mask);
    int32_t pick = -1;
    for (size_t t = 0; t < mask.size() && pick < 0; ++t) {
      if (mask[t] != 0 && t != 0) pick = static_cast<int32_t>(t);
    }
    if (pick < 0 || !m.accept_token(pick).ok()) break;
  }
  return 0;
}
