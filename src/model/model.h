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
  // weight. Errors name the file and the tensor.
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
  kv::KvCacheConfig kv_config(int64_t n_blocks, kv::KvType type = kv::KvType::kF16,
                              int64_t block_size = 16, int64_t n_seqs = 1,
                              int64_t n_blocks_window = 0) const;
  // Whether the sliding-window layers' K/V can live apart: some KV layers are windowed, some not.
  bool has_window_space() const;

  // Runs one step: writes the K/V of every batch token into `kv` and returns the logits of the
  // rows with need_logits, in row order: [n_outputs, n_vocab] (with batch.output_hidden their
  // final-norm hidden states, [n_outputs, n_embd]), valid until the next forward with `ws`.
  // Errors (never CHECKs) on a batch inconsistent with the model, cache or workspace. The
  // backend runs every op; the weights must have been bound for it (CPU: the model's kernels).
  Result<std::span<const float>> forward(const Batch& batch, kv::KvCache& kv, Workspace& ws,
                                         Backend& backend) const;

 private:
  Model() = default;
  // from_file, converting each matrix in place into kernels.layout_for when `writable` (the
  // file's own bytes) is not empty.
  static Result<Model> bind(std::shared_ptr<const gguf::File> file, const kernels::Kernels& kernels,
                            std::span<uint8_t> writable);
  Status check_step(const Batch& batch, const kv::KvCache& kv, const Workspace& ws,
                    const Backend& backend) const;
  std::span<const float> run_layers(const Batch& batch, kv::KvCache& kv, Workspace& ws,
                                    Backend& backend) const;
  void embed(Workspace& ws, Backend& backend) const;
  void attention_block(int64_t il, int64_t n, kv::KvCache& kv, Workspace& ws,
                       Backend& backend) const;
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
