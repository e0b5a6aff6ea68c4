// A loaded model: config, weights (read into huge pages or mapped) bound by name, and the forward pass.
//
// forward() runs every layer once for the whole batch (prompt chunks and decode tokens of any
// number of sequences): RMSNorm -> Q/K/V matmuls (+ bias / Q-K norm) -> RoPE + KV write ->
// paged attention -> output matmul -> RMSNorm -> gate/up matmuls -> SiLU * up -> down matmul,
// each op run by a Backend (model/backend.h). Each weight matrix is streamed once per step
// whatever the batch size.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "model/arch.h"
#include "model/backend.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/ops.h"
#include "model/weights.h"
#include "model/workspace.h"


namespace ridge::model {

class Model {
 public:
  // Reads `path` into huge pages (or maps it: gguf::Backing), reads the config, binds every
  // weight. Errors name the file and the tensor. A folder is read as a Hugging Face checkpoint,
  // converted to GGUF in memory (checkpoint/hf_folder.h).
  static Result<Model> load(const std::string& path, const kernels::Kernels& kernels,
                            gguf::Backing backing = gguf::Backing::kHugePages);
  // Binds the weights of an opened file, left in GGUF's row order (the file may be shared).
  static Result<Model> from_file(std::shared_ptr<const gguf::File> file,
                                 const kernels::Kernels& kernels);

  const ModelConfig& config() const { return cfg_; }
  const gguf::File& file() const { return *file_; }
  std::shared_ptr<const gguf::File> shared_file() const { return file_; }
  const Weights& weights() const { return w_; }
  const kernels::Kernels& kernels() const { return *kernels_; }
  const Architecture& architecture() const { return *arch_; }

  // A KV cache config matching this model: K/V for its attention layers, and for models with
  // linear-attention layers recurrent state for n_seqs sequences at once. n_blocks_window > 0
  // puts the sliding-window layers' K/V in a space of that many blocks of their own
  // (kv_cache.h), where the model has both windowed and global KV layers (has_window_space).
  // mtp: one more KV layer, the MTP head's (after the trunk's; where has_mtp()).
  kv::KvCacheConfig kv_config(int64_t n_blocks, kv::KvType type = kv::KvType::kF16,
                              int64_t block_size = 16, int64_t n_seqs = 1,
                              int64_t n_blocks_window = 0, bool mtp = false) const;
  // Whether the sliding-window layers' K/V can live apart: some KV layers are windowed, some not.
  bool has_window_space() const;

  // Runs one step: writes the K/V of every batch token into `kv` and returns the logits of the
  // rows with need_logits, in row order: [n_outputs, n_vocab] (with batch.output_hidden their
  // final-norm hidden states, [n_outputs, n_embd]), in host memory, valid until the next forward
  // with `ws`.
  // Errors (never CHECKs) on a batch inconsistent with the model, cache or workspace. The
  // backend runs every op; the weights must have been bound for it (CPU: the model's kernels).
  // With a cache that holds the MTP head's KV layer, every step also writes that layer's K/V
  // for its rows (each token paired with the hidden state before it: Batch::mtp_h) and leaves
  // every row's final-norm hidden state in ws.mtp_hidden.
  Result<std::span<const float>> forward(const Batch& batch, kv::KvCache& kv, Workspace& ws,
                                         Backend& backend) const;

  // One step of the MTP head (model/mtp.cpp): row r pairs the batch's token r with hidden state
  // h[r] ([n_tokens, n_embd], host memory: the trunk's at the position before, or the head's own
  // previous one), writes the head's K/V at its slot and returns the logits of every row (all need
  // logits) of the token after the next; ws.mtp_hidden gets each row's own hidden state.
  Result<std::span<const float>> forward_mtp(const Batch& batch, std::span<const float> h,
                                             kv::KvCache& kv, Workspace& ws,
                                             Backend& backend) const;
  // Whether the model has an MTP head: nextn layers in its config and their tensors in the file.
  bool has_mtp() const { return cfg_.has_mtp() && w_.mtp.eh_proj.data != nullptr; }
  // Whether `kv` holds the MTP head's layer (made with kv_config's mtp).
  bool cache_has_mtp(const kv::KvCache& kv) const;

 private:
  Model() = default;
  // from_file, converting each matrix in place into kernels.layout_for when `writable` (the
  // file's own bytes) is not empty.
  static Result<Model> bind(std::shared_ptr<const gguf::File> file, const kernels::Kernels& kernels,
                            std::span<uint8_t> writable);
  Status check_step(const Batch& batch, const kv::KvCache& kv, const Workspace& ws,
                    const Backend& backend) const;
  // What every step must fit: the workspace's sizes and threads, and the batch's indices.
  Status check_limits(const Batch& batch, const kv::KvCache& kv, const Workspace& ws,
                      const Backend& backend) const;
  // A step's returned rows, copied into ws.host_out when the backend's memory is not the host's.
  static std::span<const float> to_host(std::span<const float> rows, Workspace& ws, Backend& backend);
  std::span<const float> run_layers(const Batch& batch, kv::KvCache& kv, Workspace& ws,
                                    Backend& backend) const;
  void embed(Workspace& ws, Backend& backend) const;
  // The step's rows of `table` (scaled as the model's embeddings) and rotary tables into ws.
  EmbedOp embed_op(const kernels::WeightView& table, Workspace& ws) const;
  // Block il's weights: the trunk's, or for il = n_layer the MTP head's.
  const LayerWeights& layer(int64_t il) const {
    return il < cfg_.n_layer ? w_.layers[static_cast<size_t>(il)] : w_.mtp.block;
  }
  // attend = false: only the layer's K/V are written (the MTP layer in a trunk step).
  void attention_block(int64_t il, int64_t n, kv::KvCache& kv, Workspace& ws, Backend& backend,
                       bool attend = true) const;
  // MTP: x = eh_proj · [RMSNorm(embedding) * enorm, RMSNorm(h) * hnorm] for the n rows (and
  // their rotary tables, unless rope_made: the trunk made them in this step).
  void mtp_input(int64_t n, const float* h, bool rope_made, Workspace& ws, Backend& backend) const;
  // The trunk step's MTP K/V from the rows' hidden states (ws.mtp_hidden) and Batch::mtp_h.
  void mtp_kv(const Batch& batch, kv::KvCache& kv, Workspace& ws, Backend& backend) const;
  void ffn_block(int64_t il, int64_t m, Workspace& ws, Backend& backend) const;
  void gemma4_moe_ffn(int64_t il, int64_t m, Workspace& ws, Backend& backend) const;
  // Gemma 4's per-layer embeddings: every layer's input rows of the step (once), and layer il's
  // addition to the residual stream of the first m rows.
  void per_layer_inputs(int64_t n, Workspace& ws, Backend& backend) const;
  void per_layer_block(int64_t il, int64_t m, Workspace& ws, Backend& backend) const;
  // x += RMSNorm(proj) * post_norm over m rows of n_embd (a residual op without bias or next norm).
  ResidualOp post_normed_add(float* proj, const float* post_norm, float* x, int64_t m) const;

  std::shared_ptr<const gguf::File> file_;
  ModelConfig cfg_;
  Weights w_;
  const kernels::Kernels* kernels_ = nullptr;
  const Architecture* arch_ = nullptr;
  std::vector<float> rope_factors_;      // [rope_dims / 2]
  std::vector<float> rope_factors_swa_;  // [swa_rope_dims / 2] the sliding-window layers' table
  YarnParams yarn_;
};

}  // namespace ridge::model
