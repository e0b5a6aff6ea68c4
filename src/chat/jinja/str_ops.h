// Python str operations on TStrings, keeping each output byte's taint where it is known.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "chat/jinja/tstring.h"

namespace ridge::chat::jinja {

enum class StripSide { kBoth, kLeft, kRight };
// str.strip([chars]): chars unset strips Unicode whitespace.
TString py_strip(const TString& s, const std::optional<std::string_view>& chars, StripSide side);
// str.split(sep, maxsplit) / rsplit; sep unset splits on whitespace runs.
std::vector<TString> py_split(const TString& s, const std::optional<std::string_view>& sep,
                              int64_t maxsplit, bool from_right);
// str.replace(old, new, count): pieces of `s` keep their spans, inserted copies keep new's.
TString py_replace(const TString& s, std::string_view old_s, const TString& new_s, int64_t count);
// Unicode simple case mapping (ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic; ß -> SS).
enum class CaseOp { kUpper, kLower, kTitle, kCapitalize, kSwap };
TString py_case(const TString& s, CaseOp op);
bool py_is_cased_upper(std::string_view s);  // str.isupper()
bool py_is_cased_lower(std::string_view s);  // str.islower()
// markupsafe's escape: & < > " ' as entities.
std::string html_escape(std::string_view s);

}  // namespace ridge::chat::jinja
