// Trie construction from the sorted token strings: each string shares its longest common prefix
// with the previous one, so nodes come out in preorder and subtree ends are known when popped.
#include "grammar/token_index.h"

#include <algorithm>
#include <numeric>
#include <string_view>
#include <utility>

namespace ridge::grammar {

TokenIndex::TokenIndex(std::vector<std::string> token_bytes, std::vector<int32_t> eog_ids)
    : bytes_(std::move(token_bytes)), is_eog_(bytes_.size(), 0) {
  for (int32_t id : eog_ids) {
    if (id >= 0 && static_cast<size_t>(id) < bytes_.size() && !is_eog_[static_cast<size_t>(id)]) {
      is_eog_[static_cast<size_t>(id)] = 1;
      eog_.push_back(id);
    }
  }
  std::sort(eog_.begin(), eog_.end());
  std::vector<int32_t> order;
  for (size_t i = 0; i < bytes_.size(); ++i) {
    if (!is_eog_[i] && !bytes_[i].empty() && bytes_[i].size() <= kMaxTokenBytes) {
      order.push_back(static_cast<int32_t>(i));
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes_[static_cast<size_t>(a)] < bytes_[static_cast<size_t>(b)];
  });
  nodes_.push_back(Node{});       // root
  std::vector<uint32_t> path{0};  // path[d] = node at depth d of the previous string
  std::string_view prev;
  for (int32_t id : order) {
    const std::string_view s = bytes_[static_cast<size_t>(id)];
    size_t lcp = 0;
    while (lcp < s.size() && lcp < prev.size() && s[lcp] == prev[lcp]) ++lcp;
    while (path.size() > lcp + 1) {
      nodes_[path.back()].skip = static_cast<uint32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t d = lcp; d < s.size(); ++d) {
      Node n;
      n.depth = static_cast<uint16_t>(d + 1);
      n.byte = static_cast<uint8_t>(s[d]);
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(n);
    }
    Node& end = nodes_[path.back()];
    if (end.tok_begin == end.tok_end) end.tok_begin = static_cast<uint32_t>(node_tokens_.size());
    node_tokens_.push_back(id);
    end.tok_end = static_cast<uint32_t>(node_tokens_.size());
    max_depth_ = std::max(max_depth_, s.size());
    prev = s;
  }
  while (!path.empty()) {
    nodes_[path.back()].skip = static_cast<uint32_t>(nodes_.size());
    path.pop_back();
  }
}

}  // namespace ridge::grammar
