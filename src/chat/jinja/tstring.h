// TString: a string with the byte ranges that came from untrusted input ("literal spans"), and
// UTF-8 helpers with Python str semantics (code points, str.isspace).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ridge::chat::jinja {

using Span = std::pair<size_t, size_t>;  // [begin, end) bytes

struct TString {
  std::string s;
  std::vector<Span> spans;  // sorted, disjoint, non-empty; adjacent spans merged
  bool markup = false;      // jinja2 Markup (the result of |safe)

  TString() = default;
  explicit TString(std::string str, bool literal = false);

  bool tainted() const { return !spans.empty(); }
  void append(const TString& o);
  void append_plain(std::string_view v) { s += v; }
  void append_literal(std::string_view v);
  void add_span(size_t b, size_t e);  // marks [b, e) (must not precede existing spans)
  // Bytes [b, e) with their spans.
  TString substr(size_t b, size_t e) const;
  // A result computed from inputs of which one was tainted: all of `out` is literal.
  static TString derived(std::string out, bool any_tainted) {
    return TString(std::move(out), any_tainted);
  }
};

// Decodes one code point at *pos and advances (an invalid byte decodes as itself + 0xDC00,
// like Python's surrogateescape, consuming one byte).
uint32_t decode_cp(std::string_view s, size_t* pos);
void append_cp(std::string* out, uint32_t cp);
// Byte offset of each code point, plus s.size() at the end.
std::vector<size_t> cp_offsets(std::string_view s);
size_t cp_count(std::string_view s);
bool py_isspace(uint32_t cp);  // Python str.isspace() for one code point

}  // namespace ridge::chat::jinja
