#include "model/batch.h"

namespace ridge::model {

int64_t Batch::n_outputs() const {
  int64_t n = 0;
  for (uint8_t f : need_logits) n += f != 0;
  return n;
}

void Batch::clear() {
  tokens.clear();
  positions.clear();
  seq_index.clear();
  slots.clear();
  need_logits.clear();
  for (auto& t : block_tables) t.clear();
  context_lens.clear();
  state_slots.clear();
  state_snapshots.clear();
  output_hidden = false;
}

int32_t Batch::add_seq(const std::vector<int32_t>& block_table, int32_t context_len,
                       int32_t state_slot) {
  const auto idx = static_cast<size_t>(context_lens.size());
  if (block_tables.size() <= idx) block_tables.resize(idx + 1);
  block_tables[idx].assign(block_table.begin(), block_table.end());
  context_lens.push_back(context_len);
  state_slots.push_back(state_slot);
  return static_cast<int32_t>(idx);
}

void Batch::add_token(int32_t token, int32_t pos, int32_t seq, bool logits, int64_t block_size) {
  const auto& table = block_tables[static_cast<size_t>(seq)];
  const auto blk = static_cast<size_t>(pos / block_size);
  const int64_t slot = blk < table.size() ? table[blk] * block_size + pos % block_size : -1;
  tokens.push_back(token);
  positions.push_back(pos);
  seq_index.push_back(seq);
  slots.push_back(slot);
  need_logits.push_back(logits ? 1 : 0);
}

Status Batch::validate(int64_t n_vocab, int64_t n_blocks, int64_t block_size) const {
  const size_t n = tokens.size();
  if (positions.size() != n || seq_index.size() != n || slots.size() != n ||
      need_logits.size() != n) {
    return error("batch: arrays of different lengths ({} tokens)", n);
  }
  if (block_tables.size() < context_lens.size()) {
    return error("batch: {} sequences but {} block tables", context_lens.size(), block_tables.size());
  }
  for (size_t s = 0; s < context_lens.size(); ++s) {
    const auto& table = block_tables[s];
    const int64_t ctx = context_lens[s];
    if (ctx < 0 || ctx > static_cast<int64_t>(table.size()) * block_size) {
      return error("batch: sequence {} has context {} but {} blocks of {}", s, ctx, table.size(),
                   block_size);
    }
    for (int32_t b : table) {
      if (b < 0 || b >= n_blocks) return error("batch: sequence {}: block id {} out of range", s, b);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab) {
      return error("batch: token {} at row {} is outside the vocabulary (0..{})", tokens[i], i,
                   n_vocab - 1);
    }
    const int32_t s = seq_index[i];
    if (s < 0 || static_cast<size_t>(s) >= context_lens.size()) {
      return error("batch: row {} refers to sequence {} of {}", i, s, context_lens.size());
    }
    const int32_t pos = positions[i];
    if (pos < 0 || pos >= context_lens[static_cast<size_t>(s)]) {
      return error("batch: row {} position {} outside sequence {}'s context {}", i, pos, s,
                   context_lens[static_cast<size_t>(s)]);
    }
    const auto& table = block_tables[static_cast<size_t>(s)];
    const int64_t expect = table[static_cast<size_t>(pos / block_size)] * block_size + pos % block_size;
    if (slots[i] != expect) {
      return error("batch: row {} slot {} does not match its block table (expected {})", i,
                   slots[i], expect);
    }
  }
  return ok_status();
}

}  // namespace ridge::model
