// A vocabulary as a byte trie, built once and shared by every Matcher (docs/grammar.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ridge::grammar {

class TokenIndex {
 public:
  // token_bytes[i]: the bytes token i decodes to; control/special tokens must be passed as ""
  // (never matched by text; only a grammar's token element allows one, by id). eog_ids:
  // end-of-generation tokens, allowed when the grammar is complete or a token element names
  // them (their bytes are ignored). Ids outside the vocabulary are ignored.
  TokenIndex(std::vector<std::string> token_bytes, std::vector<int32_t> eog_ids);

  int32_t n_vocab() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  bool is_eog(int32_t id) const { return is_eog_[static_cast<size_t>(id)] != 0; }
  const std::vector<int32_t>& eog_ids() const { return eog_; }

  // Trie nodes in depth-first preorder, children in byte order. nodes()[0] is the root (the
  // empty prefix); a node's subtree is [i, skip). Tokens whose bytes end at node i are
  // node_tokens()[tok_begin, tok_end).
  struct Node {
    uint32_t skip = 0;
    uint32_t tok_begin = 0, tok_end = 0;
    uint16_t depth = 0;
    uint8_t byte = 0;
  };
  static constexpr size_t kMaxTokenBytes = 65535;  // longer tokens are never allowed
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& node_tokens() const { return node_tokens_; }
  size_t max_depth() const { return max_depth_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<uint8_t> is_eog_;
  std::vector<int32_t> eog_;
  std::vector<Node> nodes_;
  std::vector<int32_t> node_tokens_;
  size_t max_depth_ = 0;
};

}  // namespace ridge::grammar
