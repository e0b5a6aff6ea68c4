#include "chat/jinja/str_ops.h"

#include <algorithm>

namespace ridge::chat::jinja {
namespace {

uint32_t lower_cp(uint32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x130) return 'i';
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 1) ? c + 1 : c;
    if (c == 0x178) return 0xFF;
    if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F) return c;
    return (c % 2 == 0) ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return c;
}

uint32_t upper_cp(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0xB5) return 0x39C;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x131) return 'I';
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 0) ? c - 1 : c;
    if (c == 0x17F) return 'S';
    if (c == 0x130 || c == 0x138 || c == 0x149 || c == 0x178) return c;
    return (c % 2 == 1) ? c - 1 : c;
  }
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x3B1 && c <= 0x3CB) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return c;
}

bool is_cased(uint32_t c) { return lower_cp(c) != c || upper_cp(c) != c || c == 0xDF; }

}  // namespace

TString py_strip(const TString& s, const std::optional<std::string_view>& chars, StripSide side) {
  std::vector<uint32_t> set;
  if (chars) {
    size_t p = 0;
    while (p < chars->size()) set.push_back(decode_cp(*chars, &p));
  }
  auto strip = [&](uint32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : py_isspace(c);
  };
  std::vector<size_t> offs = cp_offsets(s.s);
  size_t n = offs.size() - 1, b = 0, e = n;
  if (side != StripSide::kRight) {
    while (b < e) {
      size_t p = offs[b];
      if (!strip(decode_cp(s.s, &p))) break;
      ++b;
    }
  }
  if (side != StripSide::kLeft) {
    while (e > b) {
      size_t p = offs[e - 1];
      if (!strip(decode_cp(s.s, &p))) break;
      --e;
    }
  }
  TString out = s.substr(offs[b], offs[e]);
  return out;
}

std::vector<TString> py_split(const TString& s, const std::optional<std::string_view>& sep,
                              int64_t maxsplit, bool from_right) {
  std::vector<TString> out;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    std::vector<std::pair<size_t, size_t>> pieces;  // byte ranges
    if (!from_right) {
      size_t start = 0;
      int64_t splits = 0;
      while (splits < maxsplit) {
        size_t f = s.s.find(*sep, start);
        if (f == std::string::npos) break;
        pieces.emplace_back(start, f);
        start = f + sep->size();
        ++splits;
      }
      pieces.emplace_back(start, s.s.size());
    } else {
      size_t end = s.s.size();
      int64_t splits = 0;
      while (splits < maxsplit && end >= sep->size()) {
        size_t f = s.s.rfind(*sep, end - sep->size());
        if (f == std::string::npos) break;
        pieces.emplace_back(f + sep->size(), end);
        end = f;
        ++splits;
      }
      pieces.emplace_back(0, end);
      std::reverse(pieces.begin(), pieces.end());
    }
    for (const auto& [b, e] : pieces) out.push_back(s.substr(b, e));
    return out;
  }
  // Whitespace runs; empty strings are dropped.
  std::vector<size_t> offs = cp_offsets(s.s);
  size_t n = offs.size() - 1;
  std::vector<bool> ws(n);
  for (size_t i = 0; i < n; ++i) {
    size_t p = offs[i];
    ws[i] = py_isspace(decode_cp(s.s, &p));
  }
  std::vector<std::pair<size_t, size_t>> words;  // code point ranges
  for (size_t i = 0; i < n;) {
    if (ws[i]) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && !ws[j]) ++j;
    words.emplace_back(i, j);
    i = j;
  }
  if (!words.empty() && static_cast<int64_t>(words.size()) - 1 > maxsplit) {
    // The remainder after maxsplit splits keeps its inner whitespace (and trailing, for split).
    size_t keep = static_cast<size_t>(maxsplit);
    // The remainder after maxsplit splits keeps its whitespace (trailing for split, leading
    // for rsplit), as CPython does.
    if (!from_right) {
      size_t rest_b = words[keep].first;
      words.resize(keep);
      words.emplace_back(rest_b, n);
    } else {
      size_t rest_e = words[words.size() - 1 - keep].second;
      std::vector<std::pair<size_t, size_t>> tail(words.end() - static_cast<long>(keep),
                                                  words.end());
      words.clear();
      words.emplace_back(0, rest_e);
      words.insert(words.end(), tail.begin(), tail.end());
    }
  }
  for (const auto& [b, e] : words) out.push_back(s.substr(offs[b], offs[e]));
  return out;
}

TString py_replace(const TString& s, std::string_view old_s, const TString& new_s, int64_t count) {
  if (count < 0) count = INT64_MAX;
  TString out;
  if (old_s.empty()) {
    std::vector<size_t> offs = cp_offsets(s.s);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < offs.size(); ++i) {
      if (done < count) {
        out.append(new_s);
        ++done;
      }
      out.append(s.substr(offs[i], offs[i + 1]));
    }
    if (done < count) out.append(new_s);
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (done < count) {
    size_t f = s.s.find(old_s, start);
    if (f == std::string::npos) break;
    out.append(s.substr(start, f));
    out.append(new_s);
    start = f + old_s.size();
    ++done;
  }
  out.append(s.substr(start, s.s.size()));
  return out;
}

TString py_case(const TString& s, CaseOp op) {
  std::string out;
  out.reserve(s.s.size());
  size_t p = 0;
  bool prev_cased = false;
  bool first = true;
  while (p < s.s.size()) {
    uint32_t c = decode_cp(s.s, &p);
    bool upper = false;
    switch (op) {
      case CaseOp::kUpper:
        upper = true;
        break;
      case CaseOp::kLower:
        upper = false;
        break;
      case CaseOp::kTitle:
        upper = !prev_cased;
        break;
      case CaseOp::kCapitalize:
        upper = first;
        break;
      case CaseOp::kSwap:
        upper = lower_cp(c) == c;
        break;
    }
    if (upper && c == 0xDF) {
      out += op == CaseOp::kUpper || op == CaseOp::kSwap ? "SS" : "Ss";
    } else {
      append_cp(&out, upper ? upper_cp(c) : lower_cp(c));
    }
    prev_cased = is_cased(c);
    first = false;
  }
  return TString::derived(std::move(out), s.tainted());
}

bool py_is_cased_upper(std::string_view s) {
  size_t p = 0;
  bool any = false;
  while (p < s.size()) {
    uint32_t c = decode_cp(s, &p);
    if (lower_cp(c) != c)
      any = true;
    else if (upper_cp(c) != c)
      return false;
  }
  return any;
}

bool py_is_cased_lower(std::string_view s) {
  size_t p = 0;
  bool any = false;
  while (p < s.size()) {
    uint32_t c = decode_cp(s, &p);
    if (upper_cp(c) != c || c == 0xDF)
      any = true;
    else if (lower_cp(c) != c)
      return false;
  }
  return any;
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace ridge::chat::jinja
