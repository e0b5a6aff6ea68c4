// Activation buffers of one forward step, allocated once for the largest step and reused. The
// buffers the step's ops read and write are the backend's memory (DeviceArray, allocated from
// Backend::memory()); the host-side bookkeeping (which experts ran, the rows of each sequence)
// stays in host vectors.
#pragma once

#include <cstdint>
#include <vector>

#include "base/device_memory.h"
#include "base/status.h"
#include "model/config.h"

namespace ridge::model {

struct WorkspaceLimits {
  int64_t max_tokens = 512;   // tokens per forward step (prompt chunk + decode tokens)
  int64_t max_outputs = 1;    // rows that need logits per step
  int64_t max_context = 4096; // longest sequence context attention may see
  int n_threads = 1;          // threads of the pool the forward runs on (at most)
  int64_t block_size = 16;    // KV block size of the cache it runs with
  bool hidden_outputs = false;  // embeddings: rows return hidden states, no logits buffer
  bool mtp = false;             // buffers of the MTP head (a model with one: cfg.has_mtp())
};

// Buffers of the mixture-of-experts FFN (the CPU's: backend/cpu/moe_ffn.h); empty for dense
// models. k = n_expert_used.
struct MoeWorkspace {
  DeviceArray<float> probs;      // [max_tokens, n_expert] router logits, then probabilities
  DeviceArray<int32_t> expert;   // [max_tokens, k] each token's experts, by descending weight
  DeviceArray<float> weight;     // [max_tokens, k] their weights
  DeviceArray<int32_t> row_of;   // [max_tokens * k] grouped row of (token t, slot s) at t * k + s
  DeviceArray<int32_t> offsets;  // [n_expert + 1] first grouped row of each expert
  DeviceArray<float> x;          // [max_tokens * k, n_embd] inputs, grouped by expert
  DeviceArray<float> y;          // [max_tokens * k, n_embd] expert outputs, same rows
  std::vector<int64_t> experts_run;  // [n_layer] distinct experts each layer ran in the last step
  DeviceArray<float> router_in;  // [max_tokens, n_embd] gemma4: the router's own input
  DeviceArray<float> out;        // [max_tokens, n_embd] gemma4: the experts' half of the FFN
};

// The batch rows [begin, end) of sequence `seq` (its rows are together in a linear-attention step).
struct SeqRows {
  int32_t seq = 0;
  int64_t begin = 0, end = 0;
  size_t snap_begin = 0, snap_end = 0;  // its snapshots in LinearWorkspace::snaps
};

// A state snapshot inside a sequence's rows: the state after the rows before `row`, into `slot`.
struct RowSnapshot {
  int64_t row = 0;
  int32_t slot = -1;
};

// Buffers of Qwen3.5's layers (the CPU's: backend/cpu/gated_delta_net.h): the Gated DeltaNet's,
// and the gated attention's q with its gate; empty for other models.
struct LinearWorkspace {
  DeviceArray<float> mixed;   // [max_tokens, conv_dim] q | k | v in-projection, then its conv
  DeviceArray<float> z;       // [max_tokens, Dv] output gate
  DeviceArray<float> beta;    // [max_tokens, Hv] b, then sigmoid(b)
  DeviceArray<float> g;       // [max_tokens, Hv] a, then the log-decay
  DeviceArray<float> q, k;    // [max_tokens, Hk * dk] L2-normalized
  DeviceArray<float> v;       // [max_tokens, Dv]
  DeviceArray<float> q_gate;  // [max_tokens, 2 q_dim] gated attention: each head's q, then gate
  std::vector<SeqRows> rows;  // the step's sequences (begin_recurrent_step)
  std::vector<RowSnapshot> snaps;  // Batch::state_snapshots by sequence, in row order
};

class Workspace {
 public:
  // Every buffer in `memory` (the backend's: Backend::memory()).
  static Result<Workspace> create(const ModelConfig& cfg, const WorkspaceLimits& limits,
                                  DeviceMemory& memory = host_memory());

  const WorkspaceLimits& limits() const { return limits_; }

  DeviceArray<float> x;         // [max_tokens, n_embd]   residual stream
  DeviceArray<float> xn;        // [max_tokens, n_embd]   normed input of a sub-layer
  DeviceArray<float> q;         // [max_tokens, q_dim] (q_dim, kv_dim: the widest layer's)
  DeviceArray<float> k;         // [max_tokens, kv_dim]
  DeviceArray<float> v;         // [max_tokens, kv_dim]
  DeviceArray<float> attn;      // [max_tokens, q_dim]    attention output (before wo; a linear
                                //                        layer's [max_tokens, Dv])
  DeviceArray<float> proj;      // [max_tokens, n_embd]   wo / down projection output
  DeviceArray<float> gate;      // [max_tokens, ffn_width] gate, then silu(gate) * up
  DeviceArray<float> up;        // [max_tokens, ffn_width] (ffn_width: n_ff, or the widest expert)
  DeviceArray<float> rope_cos;  // [max_tokens, rope_dims / 2]
  DeviceArray<float> rope_sin;  // [max_tokens, rope_dims / 2]
  // Sliding-window layers' cos/sin where their rope differs (cfg.swa_rope_differs()), else empty.
  DeviceArray<float> rope_cos_swa;
  DeviceArray<float> rope_sin_swa;
  // Gemma 4's per-layer embeddings (n_embd_per_layer = p > 0), else empty.
  DeviceArray<float> ple;       // [n_layer, max_tokens, p] every layer's input rows
  // Layer il's rows of ple ([max_tokens, p]).
  float* ple_rows(int64_t il, int64_t p) { return ple.data() + il * limits_.max_tokens * p; }
  DeviceArray<float> ple_proj;  // [max_tokens, n_layer * p]
  DeviceArray<float> ple_gate;  // [max_tokens, p]
  DeviceArray<float> logits;    // [max_outputs, n_vocab]
  MoeWorkspace moe;
  LinearWorkspace lin;
  // The MTP head (limits.mtp): after a step of a cache with its KV layer, every row's final-norm
  // hidden state; after forward_mtp, every row's MTP hidden state (the next draft's h).
  DeviceArray<float> mtp_hidden;  // [max_tokens, n_embd]
  DeviceArray<float> mtp_h_in;    // [max_tokens, n_embd] each row's paired h
  DeviceArray<float> mtp_cat;     // [max_tokens, 2 n_embd] [enorm(embedding), hnorm(h)]
  // The rows a step returns, copied to the host when the memory is not host_visible.
  std::vector<float> host_out;

 private:
  WorkspaceLimits limits_;
};

}  // namespace ridge::model
