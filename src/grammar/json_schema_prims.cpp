// Building blocks of the JSON Schema converter: literals, the shared JSON rules, integer ranges,
// and strings outside a set of keys.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "grammar/json_schema_internal.h"
#include "grammar/utf8.h"

namespace ridge::grammar::detail {

bool decode_utf8(std::string_view s, std::vector<uint32_t>* out) {
  Utf8Partial p;
  for (char c : s) {
    uint32_t cp = 0;
    const Utf8Step st = utf8_feed(p, static_cast<uint8_t>(c), &cp);
    if (st == Utf8Step::kInvalid) return false;
    if (st == Utf8Step::kComplete) out->push_back(cp);
  }
  return p.need == 0;
}

namespace {

// One code point inside a GBNF literal or class.
std::string gbnf_char(uint32_t cp, bool in_class) {
  if (cp == '"' || cp == '\\' || (in_class && (cp == ']' || cp == '-' || cp == '^'))) {
    return fmt::format("\\{}", static_cast<char>(cp));
  }
  if (cp < 0x20 || cp == 0x7F) return fmt::format("\\x{:02X}", cp);
  std::string s;
  utf8_append(s, cp);
  return s;
}

// Appends a-b (a single character when a == b; nothing when a > b) to a class's body.
void append_class_range(std::string& raw, uint32_t a, uint32_t b) {
  if (a > b) return;
  raw += gbnf_char(a, true);
  if (b > a) {
    raw += '-';
    raw += gbnf_char(b, true);
  }
}

}  // namespace

}  // namespace ridge::grammar::detail

namespace ridge::grammar {

std::string gbnf_literal(std::string_view utf8) {
  std::vector<uint32_t> cps;
  detail::decode_utf8(utf8, &cps);
  std::string out = "\"";
  for (uint32_t cp : cps) out += detail::gbnf_char(cp, false);
  return out + "\"";
}

}  // namespace ridge::grammar

namespace ridge::grammar::detail {

std::string json_char_expr(uint32_t cp) {
  switch (cp) {
    case '"':
      return R"("\\\"")";
    case '\\':
      return R"("\\\\")";
    case '\n':
      return R"("\\n")";
    case '\t':
      return R"("\\t")";
    case '\r':
      return R"("\\r")";
    case '\f':
      return R"("\\f")";
    default:
      break;
  }
  if (cp < 0x20) return fmt::format(R"("\\u{:04x}")", cp);
  std::string out = "\"";
  out += gbnf_char(cp, false);
  out += '"';
  return out;
}

std::string json_class_expr(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
  std::vector<std::string> alts;
  std::string raw;
  auto in = [&](uint32_t cp) {
    return std::any_of(ranges.begin(), ranges.end(),
                       [&](const auto& r) { return r.first <= cp && cp <= r.second; });
  };
  for (auto [lo, hi] : ranges) {
    // Raw characters: everything but '"', '\\' and control characters (and surrogates).
    auto add = [&](uint32_t a, uint32_t b) { append_class_range(raw, a, b); };
    const uint32_t cuts[] = {0x20, '"', '\\', 0xD800};
    uint32_t a = std::max<uint32_t>(lo, 0x20);
    for (uint32_t skip : cuts) {
      if (skip == 0x20) continue;
      const uint32_t skip_hi = skip == 0xD800 ? 0xDFFF : skip;
      if (a > hi) break;
      if (skip > hi || skip_hi < a) continue;
      if (skip > a) add(a, skip - 1);
      a = skip_hi + 1;
    }
    if (a <= hi) add(a, hi);
  }
  if (!raw.empty()) alts.push_back("[" + raw + "]");
  for (uint32_t cp : {uint32_t{'"'}, uint32_t{'\\'}, uint32_t{'\n'}, uint32_t{'\t'}, uint32_t{'\r'},
                      uint32_t{'\f'}}) {
    if (in(cp)) alts.push_back(json_char_expr(cp));
  }
  if (alts.empty()) return "";
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

std::string text_char_expr(uint32_t cp) {
  std::string out = "\"";
  out += gbnf_char(cp, false);
  out += '"';
  return out;
}

std::string text_class_expr(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
  std::string raw;
  auto add = [&](uint32_t a, uint32_t b) { append_class_range(raw, a, b); };
  for (auto [lo, hi] : ranges) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      add(lo, hi);
      continue;
    }
    if (lo < 0xD800) add(lo, 0xD7FF);
    if (hi > 0xDFFF) add(0xE000, hi);
  }
  if (raw.empty()) return "";
  std::string out = "[";
  out += raw;
  out += ']';
  return out;
}

std::string primitive_body(std::string_view name, std::vector<std::string>* deps) {
  struct Prim {
    const char* body;
    std::vector<std::string> deps;
  };
  static const std::map<std::string, Prim, std::less<>> kPrims = {
      {"j-ws", {R"(( " " | "\n" [ \t]{0,20} )?)", {}}},
      {"j-value",
       {R"(j-object | j-array | j-string | j-number | j-boolean | j-null)",
        {"j-object", "j-array", "j-string", "j-number", "j-boolean", "j-null"}}},
      {"j-object",
       {R"("{" j-ws ( j-string j-ws ":" j-ws j-value j-ws )"
        R"(( "," j-ws j-string j-ws ":" j-ws j-value j-ws )* )? "}")",
        {"j-ws", "j-string", "j-value"}}},
      {"j-array",
       {R"("[" j-ws ( j-value j-ws ( "," j-ws j-value j-ws )* )? "]")", {"j-ws", "j-value"}}},
      {"j-string", {R"("\"" j-char* "\"")", {"j-char"}}},
      // \u escapes of surrogates are left out: a pair would count as two characters here but
      // one in the decoded string (and a lone one is not text).
      {"j-char",
       {R"([^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | )"
        R"("u" ( [0-9a-cA-Ce-fE-F] j-hex{3} | [dD] [0-7] j-hex{2} ) ))",
        {"j-hex"}}},
      {"j-hex", {R"([0-9a-fA-F])", {}}},
      {"j-number",
       {R"("-"? ( "0" | [1-9] [0-9]{0,17} ) ( "." [0-9]{1,17} )? ( [eE] [-+]? [0-9]{1,3} )?)", {}}},
      {"j-integer", {R"("-"? ( "0" | [1-9] [0-9]{0,17} ))", {}}},
      {"j-boolean", {R"("true" | "false")", {}}},
      {"j-null", {R"("null")", {}}},
      {"j-date",
       {R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ))", {}}},
      {"j-time",
       {R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? )"
        R"(( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
        {}}},
      {"j-date-time", {R"(j-date "T" j-time)", {"j-date", "j-time"}}},
      {"j-uuid", {R"(j-hex{8} "-" j-hex{4} "-" j-hex{4} "-" j-hex{4} "-" j-hex{12})", {"j-hex"}}},
  };
  auto it = kPrims.find(name);
  if (it == kPrims.end()) return "";
  deps->insert(deps->end(), it->second.deps.begin(), it->second.deps.end());
  return it->second.body;
}

namespace {

// Equal-length decimal strings a <= b: every string of that length in [a, b].
std::string same_length_range(const std::string& a, const std::string& b) {
  if (a.empty()) return "";
  if (a == b) return "\"" + a + "\"";
  const size_t k = a.size() - 1;
  if (k == 0) return fmt::format("[{}-{}]", a[0], b[0]);
  if (a[0] == b[0]) {
    return fmt::format("\"{}\" ( {} )", a[0], same_length_range(a.substr(1), b.substr(1)));
  }
  std::vector<std::string> alts;
  char first = a[0], last = b[0];
  if (a.substr(1) != std::string(k, '0')) {
    alts.push_back(
        fmt::format("\"{}\" ( {} )", a[0], same_length_range(a.substr(1), std::string(k, '9'))));
    ++first;
  }
  std::string tail_alt;
  if (b.substr(1) != std::string(k, '9')) {
    tail_alt =
        fmt::format("\"{}\" ( {} )", b[0], same_length_range(std::string(k, '0'), b.substr(1)));
    --last;
  }
  if (first <= last) alts.push_back(fmt::format("[{}-{}] [0-9]{{{}}}", first, last, k));
  if (!tail_alt.empty()) alts.push_back(tail_alt);
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

std::string uint_range(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  int64_t low = 0, high = 9;  // numbers with d digits: [low, high]
  for (int d = 1; d <= 18 && low <= hi; ++d) {
    const int64_t a = std::max(lo, low), b = std::min(hi, high);
    if (a <= b)
      alts.push_back("( " + same_length_range(std::to_string(a), std::to_string(b)) + " )");
    if (d == 18) break;  // kMaxIntegerMagnitude has 18 digits; 19 would overflow int64
    low = d == 1 ? 10 : low * 10;
    high = high * 10 + 9;
  }
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

}  // namespace

std::string integer_range_expr(int64_t lo, int64_t hi) {
  lo = std::max(lo, -kMaxIntegerMagnitude);
  hi = std::min(hi, kMaxIntegerMagnitude);
  std::vector<std::string> alts;
  if (hi >= 0) alts.push_back(uint_range(std::max<int64_t>(lo, 0), hi));
  if (lo < 0) alts.push_back("\"-\" ( " + uint_range(std::max<int64_t>(1, -hi), -lo) + " )");
  std::string out = "( ";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + " )";
}

std::string string_not_in_expr(const std::vector<std::string>& keys,
                               const std::function<std::string(std::string)>& add_rule) {
  // A trie of the keys' code points; at each node the string may end (if the prefix is not a
  // key), deviate with a raw character that is no child (then anything), or follow a child.
  // Escapes are allowed only after deviating, so no spelling of a key can slip through.
  struct Node {
    std::map<uint32_t, size_t> kids;
    bool end = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& k : keys) {
    std::vector<uint32_t> cps;
    if (!decode_utf8(k, &cps)) continue;
    size_t n = 0;
    for (uint32_t cp : cps) {
      auto it = trie[n].kids.find(cp);
      if (it == trie[n].kids.end()) {
        trie[n].kids.emplace(cp, trie.size());
        n = trie.size();
        trie.emplace_back();
      } else {
        n = it->second;
      }
    }
    trie[n].end = true;
  }
  std::function<std::string(size_t)> node_rule = [&](size_t n) -> std::string {
    std::vector<std::string> alts;
    if (!trie[n].end) alts.push_back(R"("\"")");
    std::vector<std::pair<uint32_t, uint32_t>> other;
    uint32_t next = 0x20;
    for (const auto& [cp, child] : trie[n].kids) {
      if (cp > next) other.push_back({next, cp - 1});
      next = cp + 1;
    }
    if (next <= 0x10FFFF) other.push_back({next, 0x10FFFF});
    // json_class_expr may add escapes for '"' and '\\': drop those two from the deviation.
    std::vector<std::pair<uint32_t, uint32_t>> raw;
    for (auto [lo, hi] : other) {
      for (uint32_t cut : {uint32_t{'"'}, uint32_t{'\\'}}) {
        if (lo <= cut && cut <= hi) {
          if (lo < cut) raw.push_back({lo, cut - 1});
          lo = cut + 1;
        }
      }
      if (lo <= hi) raw.push_back({lo, hi});
    }
    const std::string dev = json_class_expr(raw);
    if (!dev.empty()) alts.push_back(dev + R"( j-char* "\"")");
    for (const auto& [cp, child] : trie[n].kids) {
      if (cp < 0x20 || cp == '"' || cp == '\\') continue;  // only reachable by escapes
      alts.push_back(json_char_expr(cp) + " " + node_rule(child));
    }
    std::string body;
    for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
    return add_rule(body);
  };
  return R"("\"" )" + node_rule(0);
}

}  // namespace ridge::grammar::detail
