// One forward step's work, flattened: the tokens of every sequence in the step (a prompt chunk
// of one, one decode token of another, ...), where each token's K/V goes, and what each sequence
// may attend to. One sequence is a batch of one.
//
// Paged attention contract: sequence s owns the KV blocks block_table(s); its token at position
// p lives in slot block_table(s)[p / block_size] * block_size + p % block_size. A token at
// position p attends to positions 0..p of its sequence (causal by position), which must all be
// in the cache once this batch's own K/V are written. context_lens[s] is the number of positions
// of sequence s in the cache after this step (max position + 1).
//
// A cache with a window space (kv_cache.h) keeps its sliding-window layers' K/V in blocks of
// their own: every sequence then also has a window-block table (the same length as its main
// one, kv::kNoBlock where a block is out of every window of this step's tokens) and every token a
// window slot; a layer reads and writes through the table and slots of its space.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "kv/kv_space.h"

namespace ridge::model {

struct Batch {
  std::vector<int32_t> tokens;        // [n_tokens] token ids
  std::vector<int32_t> positions;     // [n_tokens] position of each token in its sequence
  std::vector<int32_t> seq_index;     // [n_tokens] sequence: index into block_offsets / context_lens
  std::vector<int64_t> slots;         // [n_tokens] KV slot the token's K/V is written to
  std::vector<uint8_t> need_logits;   // [n_tokens] 1: this row's logits are returned
  // Every sequence's KV block ids, one table after another: sequence s's are
  // block_ids[block_offsets[s], block_offsets[s + 1]) (block_offsets: [n_seqs + 1]).
  std::vector<int32_t> block_ids;
  std::vector<int32_t> block_offsets = {0};
  std::vector<int32_t> context_lens;  // [n_seqs] positions in the cache after this step
  // The window space's tables (same offsets as block_ids) and slots; empty without one.
  std::vector<int32_t> window_block_ids;
  std::vector<int64_t> window_slots;  // [n_tokens]
  // [n_seqs] the recurrent-state slot of each sequence (models with linear-attention layers,
  // kv::RecurrentState; -1 otherwise). Such a model also needs each sequence's rows together, in
  // position order, continuing where its state stopped (or at position 0, which resets it).
  std::vector<int32_t> state_slots;
  // Copies of a sequence's recurrent state taken inside the step (prefix caching's snapshots at
  // block boundaries, a draft's rollback points): once sequence `seq` has consumed its first
  // n_positions positions (where it starts in this step, or after one of its rows here), every
  // linear layer's state is copied into `slot`, which then holds n_positions positions. The slot
  // is no sequence's own slot in this step, and each is named once.
  struct StateSnapshot {
    int32_t seq = 0;
    int32_t n_positions = 0;
    int32_t slot = -1;
  };
  std::vector<StateSnapshot> state_snapshots;
  // A cache with the MTP head's KV layer (Model::kv_config with mtp): each sequence's final-norm
  // hidden state at the position before its first row here, [n_seqs, n_embd], which the MTP
  // layer pairs with that row's token (empty, or a sequence starting at position 0: zeros).
  std::vector<float> mtp_h;
  // Embeddings: the rows with need_logits return their final-norm hidden state [n_embd]
  // instead of logits (the output head is skipped).
  bool output_hidden = false;

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_seqs() const { return static_cast<int64_t>(context_lens.size()); }
  int64_t n_outputs() const;
  std::span<const int32_t> block_table(int32_t seq, kv::KvSpace space = kv::KvSpace::kMain) const {
    const auto s = static_cast<size_t>(seq);
    return std::span<const int32_t>(space == kv::KvSpace::kWindow ? window_block_ids : block_ids)
        .subspan(static_cast<size_t>(block_offsets[s]),
                 static_cast<size_t>(block_offsets[s + 1] - block_offsets[s]));
  }
  const std::vector<int64_t>& slots_of(kv::KvSpace space) const {
    return space == kv::KvSpace::kWindow ? window_slots : slots;
  }

  // Empties the batch, keeping capacity.
  void clear();
  // Adds a sequence with its block table (and recurrent-state slot, and window-block table with
  // a window space); returns its index.
  int32_t add_seq(const std::vector<int32_t>& table, int32_t context_len,
                  int32_t state_slot = -1, const std::vector<int32_t>& window_table = {});
  // Adds one token of sequence `seq`; its slots are derived from the sequence's block tables.
  void add_token(int32_t token, int32_t pos, int32_t seq, bool logits, int64_t block_size);

  // The cache sizes a batch is checked against.
  struct Limits {
    int64_t n_vocab = 0;
    int64_t n_blocks = 0;
    int64_t block_size = 0;
    int64_t n_blocks_window = 0;  // > 0: the cache has a window space
    int64_t window = 0;           // positions a windowed layer attends to (its n_swa)
  };
  // Checks every index against the model and cache sizes (the batch may come from a request):
  // token ids, positions, sequence indices, slots, block ids, and that each token's position is
  // inside its sequence's context and its slots match its block tables (with a window space,
  // that every block of a token's window is there).
  Status validate(const Limits& lim) const;
  Status validate(int64_t n_vocab, int64_t n_blocks, int64_t block_size) const {
    return validate(Limits{n_vocab, n_blocks, block_size, 0, 0});
  }

 private:
  Status validate_window(const Limits& lim) const;
};

}  // namespace ridge::model
