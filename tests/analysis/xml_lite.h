// A strict little XML parser for tests of the SVG charts (no XML library is a dependency): it
// accepts only well-formed documents (one root, properly nested and closed tags, quoted
// attributes, no duplicate attributes, only the five predefined entities and numeric character
// references, no stray '<' or '&') and returns the element tree, or an error naming the offset.
#pragma once

#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ridge::testing {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // character data directly inside (entities decoded)
  std::vector<std::unique_ptr<XmlElement>> children;

  // Every element of the subtree (this one included) with that name, in document order.
  void collect(std::string_view tag, std::vector<const XmlElement*>& out) const {
    if (name == tag) out.push_back(this);
    for (const auto& c : children) c->collect(tag, out);
  }
  std::vector<const XmlElement*> all(std::string_view tag) const {
    std::vector<const XmlElement*> out;
    collect(tag, out);
    return out;
  }
  std::string attr(const std::string& key) const {
    auto it = attrs.find(key);
    return it == attrs.end() ? std::string() : it->second;
  }
  // Whether the space-separated class attribute lists `cls`.
  bool has_class(std::string_view cls) const {
    auto it = attrs.find("class");
    if (it == attrs.end()) return false;
    std::string_view rest = it->second;
    while (!rest.empty()) {
      const size_t sp = rest.find(' ');
      if (rest.substr(0, sp) == cls) return true;
      if (sp == std::string_view::npos) break;
      rest.remove_prefix(sp + 1);
    }
    return false;
  }
};

// Keeps a view of the document: it must outlive the parser.
class XmlParser {
 public:
  explicit XmlParser(std::string_view s) : s_(s) {}

  // The root element, or nullptr with error() set.
  std::unique_ptr<XmlElement> parse() {
    skip_space();
    if (s_.substr(i_, 5) == "<?xml") {
      size_t end = s_.find("?>", i_);
      if (end == std::string_view::npos) return fail("unterminated XML declaration");
      i_ = end + 2;
    }
    skip_space();
    auto root = element();
    if (!root) return nullptr;
    skip_space();
    if (i_ != s_.size()) return fail("content after the root element");
    return root;
  }
  const std::string& error() const { return error_; }

 private:
  std::unique_ptr<XmlElement> fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(i_);
    return nullptr;
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.';
  }
  bool name(std::string& out) {
    size_t b = i_;
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    out = std::string(s_.substr(b, i_ - b));
    return !out.empty() && !std::isdigit(static_cast<unsigned char>(out[0])) && out[0] != '-';
  }
  // Decodes character data up to `stop` (exclusive); false on a bad entity or a stray '<'.
  bool chars(size_t stop, std::string& out) {
    while (i_ < stop) {
      char c = s_[i_];
      if (c == '<') return false;
      if (c != '&') {
        out += c;
        ++i_;
        continue;
      }
      size_t semi = s_.find(';', i_);
      if (semi == std::string_view::npos || semi >= stop) return false;
      std::string_view ent = s_.substr(i_ + 1, semi - i_ - 1);
      if (ent == "amp") out += '&';
      else if (ent == "lt") out += '<';
      else if (ent == "gt") out += '>';
      else if (ent == "quot") out += '"';
      else if (ent == "apos") out += '\'';
      else if (ent.size() > 1 && ent[0] == '#') out += '?';  // numeric reference: accepted
      else return false;
      i_ = semi + 1;
    }
    return true;
  }
  std::unique_ptr<XmlElement> element() {
    if (i_ >= s_.size() || s_[i_] != '<') return fail("expected '<'");
    ++i_;
    auto e = std::make_unique<XmlElement>();
    if (!name(e->name)) return fail("bad element name");
    for (;;) {
      const size_t before = i_;
      skip_space();
      if (i_ >= s_.size()) return fail("unterminated start tag <" + e->name);
      if (s_.substr(i_, 2) == "/>") {
        i_ += 2;
        return e;
      }
      if (s_[i_] == '>') {
        ++i_;
        break;
      }
      if (i_ == before) return fail("attributes must be separated by space");
      std::string key;
      if (!name(key)) return fail("bad attribute name in <" + e->name);
      skip_space();
      if (i_ >= s_.size() || s_[i_] != '=') return fail("attribute " + key + " has no value");
      ++i_;
      skip_space();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) return fail("unquoted attribute " + key);
      const char q = s_[i_++];
      size_t end = s_.find(q, i_);
      if (end == std::string_view::npos) return fail("unterminated attribute " + key);
      std::string value;
      if (!chars(end, value)) return fail("bad character data in attribute " + key);
      i_ = end + 1;
      if (!e->attrs.emplace(key, value).second) return fail("duplicate attribute " + key);
    }
    for (;;) {  // content
      size_t lt = s_.find('<', i_);
      if (lt == std::string_view::npos) return fail("unclosed <" + e->name + ">");
      if (!chars(lt, e->text)) return fail("bad character data in <" + e->name + ">");
      if (s_.substr(i_, 4) == "<!--") {
        size_t end = s_.find("-->", i_);
        if (end == std::string_view::npos) return fail("unterminated comment");
        i_ = end + 3;
        continue;
      }
      if (s_.substr(i_, 2) == "</") {
        i_ += 2;
        std::string closing;
        if (!name(closing) || closing != e->name) return fail("</" + closing + "> closes <" + e->name + ">");
        skip_space();
        if (i_ >= s_.size() || s_[i_] != '>') return fail("bad end tag");
        ++i_;
        return e;
      }
      auto child = element();
      if (!child) return nullptr;
      e->children.push_back(std::move(child));
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string error_;
};

}  // namespace ridge::testing
