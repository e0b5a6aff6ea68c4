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
  block_ids.clear();
  block_offsets.assign(1, 0);
  context_lens.clear();
  state_slots.clear();
  state_snapshots.clear();
  output_hidden = false;
}

int32_t Batch::add_seq(const std::vector<int32_t>& table, int32_t context_len,
                       int32_t state_slot) {
  const auto idx = static_cast<size_t>(context_lens.size());
  block_ids.insert(block_ids.end(), table.begin(), table.end());
  block_offsets.push_back(static_cast<int32_t>(block_ids.size()));
  context_lens.push_back(context_len);
  state_slots.push_back(state_slot);
  return static_cast<int32_t>(idx);
}

void Batch::add_token(int32_t token, int32_t pos, int32_t seq, bool logits, int64_t block_size) {
  const std::span<const int32_t> table = block_table(seq);
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
  if (block_offsets.size() != context_lens.size() + 1 || block_offsets.front() != 0 ||
      block_offsets.back() != static_cast<int64_t>(block_ids.size())) {
    return error("batch: {} sequences but {} block table offsets over {} block ids",
                 context_lens.size(), block_offsets.size(), block_ids.size());
  }
  for (size_t s = 0; s < context_lens.size(); ++s) {
    if (block_offsets[s + 1] < block_offsets[s]) {
      return error("batch: sequence {}'s block table offsets decrease", s);
    }
    const std::span<const int32_t> table = block_table(static_cast<int32_t>(s));
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
    const std::span<const int32_t> table = block_table(s);
    const int64_t expect = table[static_cast<size_t>(pos / block_size)] * block_size + pos % block_size;
    if (slots[i] != expect) {
      return error("batch: row {} slot {} does not match its block table (expected {})", i,
                   slots[i], expect);
    }
  }
  return ok_status();
}

}  // namespace ridge::model
