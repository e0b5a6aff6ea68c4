#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include <string>

namespace ridge::tokenizer {

namespace {

// llama.cpp's whitespace set (Unicode White_Space). Spelled out instead of \s so PCRE2's
// notion of \s under UCP cannot differ from it.
#define RIDGE_WS "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
constexpr const char* kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" RIDGE_WS "\\p{L}\\p{N}]+|[" RIDGE_WS
    "]+(?![^" RIDGE_WS "])|[" RIDGE_WS "]+";
// Llama 3 and Qwen2 differ only in how many digits one word may hold; Qwen3.5 ("qwen35") is
// Qwen2 with combining marks (\p{M}) counted with the letters of a word, and so also kept out of
// punctuation runs (the optional character before a word still excludes only \p{L} and \p{N}).
#define RIDGE_LLAMA3_LIKE(LETTER, MARK, DIGITS)                                                   \
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?" LETTER "+|\\p{N}" \
  DIGITS "| ?[^" RIDGE_WS "\\p{L}" MARK "\\p{N}]+[\\r\\n]*|[" RIDGE_WS "]*[\\r\\n]+|[" RIDGE_WS       \
  "]+(?![^" RIDGE_WS "])|[" RIDGE_WS "]+"
constexpr const char* kLlama3 = RIDGE_LLAMA3_LIKE("\\p{L}", "", "{1,3}");
constexpr const char* kQwen2 = RIDGE_LLAMA3_LIKE("\\p{L}", "", "");
constexpr const char* kQwen35 = RIDGE_LLAMA3_LIKE("[\\p{L}\\p{M}]", "\\p{M}", "");
#undef RIDGE_LLAMA3_LIKE
// o200k ("gpt-4o": gpt-oss, GPT-4o; also llama4, kanana2, talkie, minimax-m2): llama.cpp's
// rewrite of the tokenizer.json regex, which it runs through std::regex on text whose non-ASCII
// code points are collapsed to one stand-in per category. Hence, as here: an "upper" letter is
// any letter but a-z and a "lower" letter any letter but A-Z (a non-ASCII letter counts as both,
// whatever its case), marks (\p{M}) are not letters (tokenizer.json folds them into words;
// llama.cpp does not), and the contractions are ASCII, any case, and only directly after a word.
// llama.cpp spells the two classes ((?=[\p{L}])([^a-z])) and ((?=[\p{L}])([^A-Z])); as plain
// classes ("not a non-letter and not a-z") PCRE2 repeats them without a backtracking frame per
// character, ten times faster on long words.
#define RIDGE_UPPER "[^\\P{L}a-z]"
#define RIDGE_LOWER "[^\\P{L}A-Z]"
#define RIDGE_CONTRACTION "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
constexpr const char* kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?" RIDGE_UPPER "*" RIDGE_LOWER "+" RIDGE_CONTRACTION
    "|[^\\r\\n\\p{L}\\p{N}]?" RIDGE_UPPER "+" RIDGE_LOWER "*" RIDGE_CONTRACTION
    "|\\p{N}{1,3}| ?[^" RIDGE_WS "\\p{L}\\p{N}]+[\\r\\n/]*|[" RIDGE_WS "]*[\\r\\n]+|[" RIDGE_WS
    "]+(?![^" RIDGE_WS "])|[" RIDGE_WS "]+";
#undef RIDGE_CONTRACTION
#undef RIDGE_LOWER
#undef RIDGE_UPPER
#undef RIDGE_WS

std::vector<const char*> patterns_for(PreType type) {
  switch (type) {
    case PreType::kGpt2: return {kGpt2};
    case PreType::kLlama3: return {kLlama3};
    case PreType::kQwen2: return {kQwen2};
    case PreType::kQwen35: return {kQwen35};
    case PreType::kStarcoder: return {"\\p{N}", kGpt2};
    case PreType::kFalcon: return {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"};
    case PreType::kGpt4o: return {kGpt4o};
    case PreType::kGemma4: return {"[^\\n]+|[\\n]+"};  // BPE runs over whole lines
    case PreType::kDefault: break;
  }
  return {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
}

}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Regex() { pcre2_code_free(code); }
};

Result<PreTokenizer> PreTokenizer::create(PreType type) {
  PreTokenizer p;
  for (const char* pattern : patterns_for(type)) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    auto re = std::make_shared<Regex>();
    re->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_UCP, &err, &err_off, nullptr);
    if (re->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return error("pre-tokenizer regex does not compile at offset {}: {}", err_off,
                   reinterpret_cast<const char*>(msg));
    }
    re->jit = pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;
    p.regexes_.push_back(std::move(re));
  }
  return p;
}

namespace {

// Next match of `re` in subject[start, end) (end is the subject's end for lookaheads).
// Returns false when there is none.
bool next_match(const pcre2_code* code, bool jit, std::string_view text, size_t start, size_t end,
                pcre2_match_data* md, size_t* mb, size_t* me) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = jit ? pcre2_jit_match(code, subject, end, start, 0, md, nullptr)
               : pcre2_match(code, subject, end, start, PCRE2_NO_UTF_CHECK, md, nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {  // very long runs: fall back to the interpreter
    rc = pcre2_match(code, subject, end, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
  }
  if (rc < 0) return false;  // no match (or a resource limit): the rest becomes one word
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  *mb = ov[0];
  *me = ov[1];
  return true;
}

size_t next_char(std::string_view text, size_t pos) {
  ++pos;
  while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
  return pos;
}

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<WordSpan>* words) const {
  if (text.empty()) return;
  std::vector<WordSpan> pieces{{0, static_cast<uint32_t>(text.size())}};
  std::vector<WordSpan> next;
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  for (const auto& re : regexes_) {
    next.clear();
    for (const WordSpan piece : pieces) {
      size_t pos = piece.begin;
      size_t mb = 0, me = 0;
      while (pos < piece.end && next_match(re->code, re->jit, text, pos, piece.end, md, &mb, &me)) {
        if (me == mb) me = next_char(text, mb);  // cannot happen with these patterns; stay safe
        if (mb > pos) next.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(mb)});
        next.push_back({static_cast<uint32_t>(mb), static_cast<uint32_t>(me)});
        pos = me;
      }
      if (pos < piece.end) next.push_back({static_cast<uint32_t>(pos), piece.end});
    }
    pieces.swap(next);
  }
  pcre2_match_data_free(md);
  words->insert(words->end(), pieces.begin(), pieces.end());
}

}  // namespace ridge::tokenizer
