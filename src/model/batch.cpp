#include "model/batch.h"

#include <algorithm>

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
  window_block_ids.clear();
  window_slots.clear();
  state_slots.clear();
  state_snapshots.clear();
  mtp_h.clear();
  output_hidden = false;
}

int32_t Batch::add_seq(const std::vector<int32_t>& table, int32_t context_len,
                       int32_t state_slot, const std::vector<int32_t>& window_table) {
  const auto idx = static_cast<size_t>(context_lens.size());
  if (!window_table.empty() || !window_block_ids.empty()) {  // every sequence has one, or none
    RIDGE_CHECK(window_table.size() == table.size() && window_block_ids.size() == block_ids.size());
    window_block_ids.insert(window_block_ids.end(), window_table.begin(), window_table.end());
  }
  block_ids.insert(block_ids.end(), table.begin(), table.end());
  block_offsets.push_back(static_cast<int32_t>(block_ids.size()));
  context_lens.push_back(context_len);
  state_slots.push_back(state_slot);
  return static_cast<int32_t>(idx);
}

namespace {

// The slot of position pos through `table`; -1 where the table has no block there.
int64_t slot_in(std::span<const int32_t> table, int32_t pos, int64_t block_size) {
  const auto blk = static_cast<size_t>(pos / block_size);
  return blk < table.size() && table[blk] >= 0 ? table[blk] * block_size + pos % block_size : -1;
}

}  // namespace

void Batch::add_token(int32_t token, int32_t pos, int32_t seq, bool logits, int64_t block_size) {
  tokens.push_back(token);
  positions.push_back(pos);
  seq_index.push_back(seq);
  slots.push_back(slot_in(block_table(seq), pos, block_size));
  if (!window_block_ids.empty()) {
    window_slots.push_back(slot_in(block_table(seq, kv::KvSpace::kWindow), pos, block_size));
  }
  need_logits.push_back(logits ? 1 : 0);
}

Status Batch::validate(const Limits& lim) const {
  const int64_t n_vocab = lim.n_vocab, n_blocks = lim.n_blocks, block_size = lim.block_size;
  const size_t n = tokens.size();
  if (positions.size() != n || seq_index.size() != n || slots.size() != n ||
      need_logits.size() != n) {
    return error("batch: arrays of different lengths ({} tokens)", n);
  }
  if (lim.n_blocks_window > 0) {
    RIDGE_RETURN_IF_ERROR(validate_window(lim));
  } else if (!window_block_ids.empty() || !window_slots.empty()) {
    return error("batch: window-block tables for a cache without a window space");
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

Status Batch::validate_window(const Limits& lim) const {
  const int64_t bs = lim.block_size;
  if (window_block_ids.size() != block_ids.size() || window_slots.size() != tokens.size()) {
    return error("batch: {} window block ids for {} block ids, {} window slots for {} tokens",
                 window_block_ids.size(), block_ids.size(), window_slots.size(), tokens.size());
  }
  for (int32_t b : window_block_ids) {
    if (b < kv::kNoBlock || b >= lim.n_blocks_window) return error("batch: window block id {} out of range", b);
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t s = seq_index[i], pos = positions[i];
    if (s < 0 || static_cast<size_t>(s) >= context_lens.size() || pos < 0 ||
        pos >= context_lens[static_cast<size_t>(s)]) {
      continue;  // validate()'s own checks report it
    }
    const std::span<const int32_t> table = block_table(s, kv::KvSpace::kWindow);
    for (int64_t b = kv::first_window_block(pos, lim.window, bs); b <= pos / bs; ++b) {
      if (static_cast<size_t>(b) >= table.size() || table[static_cast<size_t>(b)] < 0) {
        return error("batch: row {} (position {}) has no window block {} of its window", i, pos, b);
      }
    }
    if (window_slots[i] != slot_in(table, pos, bs)) {
      return error("batch: row {} window slot {} does not match its window-block table", i, window_slots[i]);
    }
  }
  return ok_status();
}

}  // namespace ridge::model
