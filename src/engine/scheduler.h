// Scheduler: decides each step's work; never touches a tensor (tested without a model).
//
// Policy (vLLM v1 / nano-vllm style, one token budget per step, no separate prefill phase):
// 1. Running sequences, decodes first (one token each), then unfinished prompt chunks, in
//    admission order, each taking at most the remaining budget. A sequence that needs a KV block
//    the pool does not have preempts the running sequence with the lowest priority, newest
//    first (possibly itself): its blocks are freed and it goes back to the waiting queue to be
//    recomputed later, keeping its place (arrival order), so it is not starved.
// 2. If nothing was preempted, waiting sequences in (priority, arrival) order are admitted while
//    budget, max_seqs and free blocks allow; their cached prefix (BlockManager) is reused and the
//    rest of the prompt is scheduled as a chunk of what budget remains. The queue head blocks
//    the rest (first-come-first-served: a long prompt is not overtaken forever by short ones).
// Chunked prefill follows: a prompt longer than the budget runs over several steps while the
// decodes of step 1 always go first.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/sequence.h"
#include "kv/block_manager.h"

namespace ridge::engine {

struct SchedulerOptions {
  int32_t max_batched_tokens = 512;
  int32_t max_seqs = 64;
  // Prompt tokens per step while sequences are decoding (0: no cap beyond max_batched_tokens).
  // A step's time grows with its prompt tokens, and every decoding sequence waits for the whole
  // step: the cap bounds their inter-token latency while an idle engine still prefills with the
  // full budget.
  int32_t max_prefill_with_decodes = 0;
};

// Tokens [start, start + n_new) of seq run in this step. With n_draft > 0 (a decode with a
// speculative draft) the last n_draft of them are seq->draft, and every row returns logits.
struct ScheduledChunk {
  Sequence* seq = nullptr;
  int32_t start = 0;
  int32_t n_new = 0;
  bool need_logits = false;  // the chunk reaches the sequence's last token
  int32_t n_draft = 0;
  bool admitted = false;     // the sequence was admitted in this step
  int32_t batch_row = 0;     // the step batch's row of its first token
};

// How many of a prompt's cached leading blocks a sequence may adopt (hybrid models: those that
// end where a recurrent state is cached); the rest of the prompt is computed.
using PrefixFilter = std::function<size_t(const kv::PrefixMatch&, std::span<const int32_t> prompt)>;

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;
  int32_t n_tokens = 0;
  int32_t n_preempted = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  Scheduler(const SchedulerOptions& opts, kv::BlockManager blocks);
  void set_prefix_filter(PrefixFilter filter) { prefix_filter_ = std::move(filter); }

  // Queues a new sequence (state kWaiting, no blocks).
  void add(std::unique_ptr<Sequence> seq);
  SchedulerOutput schedule();
  // Adds the first k tokens of the decoding chunk's seq->draft to the step when the token budget
  // and free blocks allow it without preempting anyone; false (nothing changed) otherwise.
  bool add_draft(SchedulerOutput& out, ScheduledChunk& chunk, int32_t k);
  // The slots of k draft tokens after the decoding chunk's token, where add_draft of up to k
  // will then succeed (an MTP head writes its K/V there while drafting); false (nothing
  // allocated) where add_draft of k would fail.
  bool reserve_draft(const SchedulerOutput& out, ScheduledChunk& chunk, int32_t k);
  // After the step's forward: the chunks' tokens are computed; full blocks are published to the
  // prefix cache. Chunks with a draft are skipped: on_verified settles them.
  void on_computed(const SchedulerOutput& out);
  // A draft chunk after verification: its first n_kept tokens stand (the decoded token and the
  // accepted drafts); the slots of the rejected ones are given back, and only kept tokens are
  // published to the prefix cache.
  void on_verified(const ScheduledChunk& chunk, int32_t n_kept);
  // Removes a sequence (finished or aborted) and frees its blocks. Returns it (state kFinished).
  std::unique_ptr<Sequence> remove(RequestId id);

  Sequence* find(RequestId id);
  std::vector<RequestId> ids() const;  // every sequence, any order
  int32_t n_running() const { return static_cast<int32_t>(running_.size()); }
  const std::vector<Sequence*>& running() const { return running_; }
  int32_t n_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  bool empty() const { return seqs_.empty(); }
  int64_t n_preemptions() const { return n_preemptions_; }
  kv::BlockManager& blocks() { return blocks_; }
  const kv::BlockManager& blocks() const { return blocks_; }
  // Whether a sequence of n tokens can ever fit in the pool (alone).
  bool fits_alone(int32_t n_tokens) const;

 private:
  void schedule_running(SchedulerOutput& out, int32_t& budget);
  void schedule_waiting(SchedulerOutput& out, int32_t& budget);
  // Frees the victim's blocks and moves it to the waiting queue; drops its chunk from out.
  void preempt(Sequence* victim, SchedulerOutput& out, int32_t& budget);
  Sequence* pick_victim() const;
  void insert_waiting(Sequence* seq);

  SchedulerOptions opts_;
  kv::BlockManager blocks_;
  PrefixFilter prefix_filter_;
  std::unordered_map<RequestId, std::unique_ptr<Sequence>> seqs_;
  std::vector<Sequence*> running_;  // admission order
  std::vector<Sequence*> waiting_;  // (priority, arrival_order) ascending
  int64_t n_preemptions_ = 0;
};

}  // namespace ridge::engine
