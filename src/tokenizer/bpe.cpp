#include <algorithm>

#include "tokenizer/encoders.h"

namespace ridge::tokenizer {

namespace {
// Min-heap order: lowest rank first, then leftmost.
struct BigramAfter {
  template <typename B>
  bool operator()(const B& a, const B& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};
constexpr size_t kMaxCachedWord = 64;
}  // namespace

void BpeSession::encode_word(std::string_view word, std::vector<int32_t>* out) {
  if (word.empty()) return;
  if (word.size() == 1 && v_.byte_id[static_cast<uint8_t>(word[0])] >= 0) {
    out->push_back(v_.byte_id[static_cast<uint8_t>(word[0])]);
    return;
  }
  // ignore_merges: a whole-word token wins. Gemma 4 does the same for a run of newlines only.
  if (v_.ignore_merges || (v_.raw_utf8_bpe && word.find_first_not_of('\n') == std::string_view::npos)) {
    auto it = v_.raw_to_id.find(word);
    if (it != v_.raw_to_id.end()) {
      out->push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWord;
  if (cacheable) {
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out->insert(out->end(), cache_ids_.begin() + it->second.first,
                  cache_ids_.begin() + it->second.first + it->second.second);
      return;
    }
  }
  const size_t before = out->size();
  merge(word, out);
  if (cacheable) {
    cache_.emplace(word, std::make_pair(static_cast<uint32_t>(cache_ids_.size()),
                                        static_cast<uint32_t>(out->size() - before)));
    cache_ids_.insert(cache_ids_.end(), out->begin() + static_cast<ptrdiff_t>(before), out->end());
  }
}

void BpeSession::add_bigram(std::string_view word, int32_t left, int32_t right) {
  if (left < 0 || right < 0) return;
  const Sym& l = syms_[left];
  const Sym& r = syms_[right];
  int32_t rank = -1, merged = -1;
  if (l.id >= 0 && r.id >= 0) {
    const uint64_t key = (static_cast<uint64_t>(l.id) << 32) | static_cast<uint32_t>(r.id);
    auto it = v_.merge_by_ids.find(key);
    if (it == v_.merge_by_ids.end()) return;
    rank = it->second.rank;
    merged = it->second.merged_id;
  } else {
    // A symbol outside the vocabulary: look the pair up by its bytes, as llama.cpp always does.
    const std::string_view ls = word.substr(l.start, l.len), rs = word.substr(r.start, r.len);
    auto it = v_.merge_by_text.find(merge_text_key(ls, rs));
    if (it == v_.merge_by_text.end()) return;
    rank = it->second;
    auto mi = v_.raw_to_id.find(word.substr(l.start, l.len + r.len));
    merged = mi == v_.raw_to_id.end() ? -1 : mi->second;
  }
  heap_.push_back({rank, left, right, l.len, r.len, merged});
  std::push_heap(heap_.begin(), heap_.end(), BigramAfter{});
}

void BpeSession::merge(std::string_view word, std::vector<int32_t>* out) {
  syms_.clear();
  heap_.clear();
  int32_t n = static_cast<int32_t>(word.size());
  if (!v_.raw_utf8_bpe) {
    for (int32_t i = 0; i < n; ++i) {  // one symbol per byte (= per byte-level character)
      syms_.push_back({static_cast<uint32_t>(i), 1, i - 1, i + 1 < n ? i + 1 : -1,
                       v_.byte_id[static_cast<uint8_t>(word[i])]});
    }
  } else {
    // One symbol per UTF-8 character, its length read from the lead byte alone (llama.cpp's
    // unicode_len_utf8), cut at the end of the word.
    for (size_t pos = 0; pos < word.size();) {
      const size_t len = std::min(word.size() - pos, utf8_lead_len(word[pos]));
      auto it = v_.raw_to_id.find(word.substr(pos, len));
      const int32_t i = static_cast<int32_t>(syms_.size());
      syms_.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(len), i - 1, i + 1,
                       it == v_.raw_to_id.end() ? -1 : it->second});
      pos += len;
    }
    n = static_cast<int32_t>(syms_.size());
    syms_.back().next = -1;
  }
  for (int32_t i = 1; i < n; ++i) add_bigram(word, i - 1, i);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), BigramAfter{});
    const Bigram b = heap_.back();
    heap_.pop_back();
    Sym& l = syms_[b.left];
    Sym& r = syms_[b.right];
    // Stale when either side changed since the pair was queued (llama.cpp compares texts; a
    // symbol's start never moves, so comparing lengths is equivalent).
    if (l.len == 0 || r.len == 0 || l.len != b.left_len || r.len != b.right_len) continue;
    l.len += r.len;
    l.id = b.merged_id;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms_[r.next].prev = b.left;
    add_bigram(word, l.prev, b.left);
    add_bigram(word, b.left, l.next);
  }
  for (int32_t i = 0; i >= 0; i = syms_[i].next) {
    const Sym& s = syms_[i];
    if (s.id >= 0) {
      out->push_back(s.id);
    } else {
      emit_unknown(word.substr(s.start, s.len), out);
    }
  }
}

// llama.cpp's fallback for a final symbol that is no token: every byte of its byte-level text
// that is itself a one-character token is emitted, the rest is dropped (raw-UTF-8 BPE: the
// byte's <0xNN> token, if there is one).
void BpeSession::emit_unknown(std::string_view raw, std::vector<int32_t>* out) const {
  if (v_.raw_utf8_bpe) {  // Gemma 4: the <0xNN> token of every byte that has one
    for (char c : raw) {
      const int32_t id = v_.hex_byte_id[static_cast<uint8_t>(c)];
      if (id >= 0) out->push_back(id);
    }
    return;
  }
  std::string enc;
  for (char c : raw) {
    enc.clear();
    append_utf8(&enc, bytes_.byte_to_cpt(static_cast<uint8_t>(c)));
    for (char e : enc) {
      const int32_t id = v_.find(std::string_view(&e, 1));
      if (id >= 0) out->push_back(id);
    }
  }
}

}  // namespace ridge::tokenizer
