#include <algorithm>

#include "tokenizer/encoders.h"

namespace ridge::tokenizer {

namespace {

struct SpmSym {
  uint32_t start, len;
  int32_t prev, next;
};
struct SpmBigram {
  float score;
  int32_t left, right;
  uint32_t size;
};
// Max-heap order: highest score first, then leftmost.
struct SpmBefore {
  bool operator()(const SpmBigram& a, const SpmBigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

void try_add(const Vocab& v, std::string_view text, const std::vector<SpmSym>& syms, int32_t left,
             int32_t right, std::vector<SpmBigram>* heap) {
  if (left < 0 || right < 0) return;
  const uint32_t size = syms[left].len + syms[right].len;
  const int32_t id = v.find(text.substr(syms[left].start, size));
  if (id < 0) return;
  heap->push_back({v.score[id], left, right, size});
  std::push_heap(heap->begin(), heap->end(), SpmBefore{});
}

}  // namespace

void spm_encode(const Vocab& v, std::string_view text, std::vector<int32_t>* out) {
  std::vector<SpmSym> syms;
  for (size_t off = 0; off < text.size();) {  // one symbol per (possibly broken) UTF-8 char
    const size_t len = std::min(utf8_lead_len(text[off]), text.size() - off);
    const int32_t idx = static_cast<int32_t>(syms.size());
    syms.push_back({static_cast<uint32_t>(off), static_cast<uint32_t>(len), idx - 1,
                    off + len == text.size() ? -1 : idx + 1});
    off += len;
  }
  if (syms.empty()) return;
  std::vector<SpmBigram> heap;
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_add(v, text, syms, i - 1, i, &heap);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), SpmBefore{});
    const SpmBigram b = heap.back();
    heap.pop_back();
    SpmSym& l = syms[b.left];
    SpmSym& r = syms[b.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.size) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    try_add(v, text, syms, l.prev, b.left, &heap);
    try_add(v, text, syms, b.left, l.next, &heap);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next) {
    const std::string_view s = text.substr(syms[i].start, syms[i].len);
    const int32_t id = v.find(s);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    for (char c : s) {  // byte fallback: <0xNN> tokens
      const int32_t bid = v.spm_byte_id[static_cast<uint8_t>(c)];
      if (bid >= 0) {
        out->push_back(bid);
      } else if (v.unk >= 0) {
        out->push_back(v.unk);
      }
    }
  }
}

}  // namespace ridge::tokenizer
