// Tokenizer: special-token partitioning, then SPM or BPE (byte-level, or raw UTF-8 with "▁" for
// spaces for Gemma 4) per text fragment, exactly in llama.cpp's order (llama_vocab::impl::tokenize).
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <deque>
#include <optional>

#include "gguf/reader.h"
#include "gguf/utf8.h"
#include "tokenizer/encoders.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/vocab.h"

namespace ridge::tokenizer {

struct Tokenizer::Impl {
  Vocab vocab;
  std::optional<PreTokenizer> pre;
  ByteUnicodeMap bytes;
};

namespace {

constexpr const char* kSpaceMark = "\xE2\x96\x81";  // "▁", SentencePiece's space

// Appends `text` with every space as "▁" (SPM and Gemma 4's normalizer).
void append_space_marked(std::string_view text, std::string* out) {
  out->reserve(out->size() + text.size() + 8);
  for (char c : text) {
    if (c == ' ') {
      *out += kSpaceMark;
    } else {
      out->push_back(c);
    }
  }
}

struct Fragment {
  size_t begin, len;
  TokenId token;  // -1: raw text [begin, begin+len)
};

using Spans = std::span<const std::pair<size_t, size_t>>;

// Whether [begin, end) shares a byte with one of the sorted, disjoint spans.
bool overlaps(Spans spans, size_t begin, size_t end) {
  const auto it = std::upper_bound(spans.begin(), spans.end(), begin,
                                   [](size_t b, const std::pair<size_t, size_t>& s) { return b < s.second; });
  return it != spans.end() && it->first < end;
}

// Splits raw text around special tokens, longest token text first (llama.cpp's
// tokenizer_st_partition). Control/unknown tokens only count when parse_special is set, and
// never where they overlap a literal span (untrusted text: see MarkedText). Text fragments are
// not cut at span boundaries, so literal spans without special text change nothing.
std::vector<Fragment> partition(const Vocab& v, std::string_view text, bool parse_special,
                                Spans literal) {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({0, text.size(), -1});
  std::vector<Fragment> next;
  for (const TokenId id : v.special_ids) {
    const bool gated = (v.attr[id] & (kAttrControl | kAttrUnknown)) != 0;
    if (!parse_special && gated) continue;
    const bool check_literal = gated && !literal.empty();
    const std::string& t = v.text[id];
    if (text.find(t) == std::string_view::npos) continue;
    next.clear();
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.begin, from = f.begin;
      const size_t end = f.begin + f.len;
      while (from < end) {
        const size_t m = text.substr(0, end).find(t, from);
        if (m == std::string_view::npos) break;
        if (check_literal && overlaps(literal, m, m + t.size())) {
          from = m + 1;  // not a token; a later match may still lie outside the span
          continue;
        }
        if (m > pos) next.push_back({pos, m - pos, -1});
        next.push_back({m, t.size(), id});
        pos = from = m + t.size();
      }
      if (pos < end) next.push_back({pos, end - pos, -1});
    }
    frags.swap(next);
  }
  return frags;
}

// Text as llama.cpp's BPE path sees it: decoded leniently (each invalid byte -> U+FFFD) and
// re-encoded. `regex_text` is the same bytes with surrogate code points (which PCRE2 cannot
// take) replaced by U+FFFD of equal length.
void sanitize(std::string_view in, std::string* out, std::string* regex_text) {
  out->clear();
  out->reserve(in.size() + 8);
  size_t pos = 0;
  while (pos < in.size()) append_utf8(out, decode_utf8_lenient(in, &pos));
  *regex_text = *out;
  for (size_t i = 0; i + 2 < regex_text->size(); ++i) {
    if (static_cast<uint8_t>((*regex_text)[i]) == 0xED && static_cast<uint8_t>((*regex_text)[i + 1]) >= 0xA0) {
      regex_text->replace(i, 3, "\xEF\xBF\xBD");
      i += 2;
    }
  }
}

void encode_bpe_text(const PreTokenizer& pre, std::string_view raw, BpeSession* session,
                     std::deque<std::string>* keep, std::vector<TokenId>* out) {
  std::string_view text = raw, subject = raw;
  if (!is_valid_utf8(raw)) {
    keep->emplace_back();
    keep->emplace_back();
    std::string& fixed = (*keep)[keep->size() - 2];
    std::string& regex_text = keep->back();
    sanitize(raw, &fixed, &regex_text);
    text = fixed;
    subject = regex_text;
  }
  std::vector<WordSpan> words;
  // The pre-tokenizer works on 32-bit offsets: cut giant inputs at character boundaries.
  constexpr size_t kChunk = size_t{1} << 30;
  for (size_t base = 0; base < text.size();) {
    size_t end = std::min(text.size(), base + kChunk);
    while (end < text.size() && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80) ++end;
    words.clear();
    pre.split(subject.substr(base, end - base), &words);
    for (const WordSpan w : words) session->encode_word(text.substr(base + w.begin, w.end - w.begin), out);
    base = end;
  }
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Result<Tokenizer> Tokenizer::from_vocab_data(VocabData data, std::string_view name) {
  auto impl = std::make_unique<Impl>();
  RIDGE_ASSIGN_OR_RETURN(impl->vocab, Vocab::build(std::move(data), name));
  if (impl->vocab.type == VocabType::kBpe) {
    RIDGE_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::create(impl->vocab.pre_type));
    impl->pre = std::move(pre);
  }
  return Tokenizer(std::move(impl));
}

Result<Tokenizer> Tokenizer::from_gguf(const gguf::File& file) {
  RIDGE_ASSIGN_OR_RETURN(VocabData data, read_vocab_data(file));
  return from_vocab_data(std::move(data), file.path());
}

void MarkedText::append_literal(std::string_view s) {
  if (s.empty()) return;
  const size_t begin = text.size();
  text += s;
  if (!literal_spans.empty() && literal_spans.back().second == begin) {
    literal_spans.back().second = text.size();
  } else {
    literal_spans.emplace_back(begin, text.size());
  }
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  return encode_impl(text, add_special, parse_special, {});
}

std::vector<TokenId> Tokenizer::encode_marked(const MarkedText& m, bool add_special) const {
  return encode_impl(m.text, add_special, /*parse_special=*/true, m.literal_spans);
}

std::vector<TokenId> Tokenizer::encode_impl(std::string_view text, bool add_special, bool parse_special,
                                            std::span<const std::pair<size_t, size_t>> literal_spans) const {
  const Vocab& v = impl_->vocab;
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 4);
  const std::vector<Fragment> frags = partition(v, text, parse_special, literal_spans);
  if (add_special && v.add_bos) out.push_back(v.bos);
  if (v.type == VocabType::kSpm) {
    bool prev_special = true;  // the first text fragment gets the space prefix
    std::string buf;
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      buf.clear();
      if (v.add_space_prefix && prev_special) buf = kSpaceMark;
      append_space_marked(text.substr(f.begin, f.len), &buf);
      spm_encode(v, buf, &out);
      prev_special = false;
    }
  } else {
    BpeSession session(v, impl_->bytes);
    std::deque<std::string> keep;  // sanitized/escaped copies; the session caches views into them
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
        continue;
      }
      std::string_view piece = text.substr(f.begin, f.len);
      if (v.raw_utf8_bpe) {  // Gemma 4's normalizer: every space becomes "▁" before splitting
        std::string& escaped = keep.emplace_back();
        append_space_marked(piece, &escaped);
        piece = escaped;
      }
      encode_bpe_text(*impl_->pre, piece, &session, &keep, &out);
    }
  }
  if (add_special && v.add_eos) out.push_back(v.eos);
  return out;
}

std::string Tokenizer::token_to_piece(TokenId id) const {
  const Vocab& v = impl_->vocab;
  return v.valid(id) ? v.piece[id] : std::string();
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool render_special) const {
  const Vocab& v = impl_->vocab;
  std::string out;
  bool strip_space = (v.type == VocabType::kSpm || v.raw_utf8_bpe) && v.add_space_prefix;
  for (const TokenId id : ids) {
    if (!v.valid(id)) continue;
    const bool hidden = !render_special && (v.attr[id] & (kAttrControl | kAttrUnknown));
    const std::string& p = v.piece[id];
    if (!hidden) out.append(strip_space && !p.empty() && p[0] == ' ' ? std::string_view(p).substr(1) : p);
    strip_space = false;
  }
  return out;
}

int32_t Tokenizer::n_vocab() const { return impl_->vocab.n_vocab(); }
TokenId Tokenizer::bos() const { return impl_->vocab.bos; }
TokenId Tokenizer::eos() const { return impl_->vocab.eos; }
TokenId Tokenizer::eot() const { return impl_->vocab.eot; }
TokenId Tokenizer::unk() const { return impl_->vocab.unk; }
bool Tokenizer::add_bos() const { return impl_->vocab.add_bos; }
bool Tokenizer::add_eos() const { return impl_->vocab.add_eos; }
bool Tokenizer::add_space_prefix() const { return impl_->vocab.add_space_prefix; }
std::span<const TokenId> Tokenizer::eog_ids() const { return impl_->vocab.eog_ids; }
bool Tokenizer::is_eog(TokenId id) const {
  return std::binary_search(impl_->vocab.eog_ids.begin(), impl_->vocab.eog_ids.end(), id);
}
bool Tokenizer::is_special(TokenId id) const {
  return impl_->vocab.valid(id) && (impl_->vocab.attr[id] & (kAttrControl | kAttrUserDefined));
}
bool Tokenizer::is_control(TokenId id) const {
  return impl_->vocab.valid(id) && (impl_->vocab.attr[id] & kAttrControl);
}
std::string_view Tokenizer::model_name() const { return impl_->vocab.model_name; }
std::string_view Tokenizer::pre_name() const { return impl_->vocab.pre_name; }
std::string_view Tokenizer::token_text(TokenId id) const {
  return impl_->vocab.valid(id) ? std::string_view(impl_->vocab.text[id]) : std::string_view();
}
TokenId Tokenizer::find_token(std::string_view text) const { return impl_->vocab.find(text); }

}  // namespace ridge::tokenizer
