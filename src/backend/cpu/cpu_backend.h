// The CPU backend: the forward's ops on host memory, split over a thread pool, with the kernel
// table of one ISA (ref, avx2, avx512: --isa). Weights stay where the model bound them (in the
// kernels' preferred layout, Model::load); the step's inputs are read in place from the Batch.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "model/backend.h"

namespace ridge::backend {

class CpuBackend final : public model::Backend {
 public:
  // Both must outlive the backend; the pool may be shared with another backend that never runs
  // at the same time (a draft model's).
  CpuBackend(const kernels::Kernels& kernels, ThreadPool& pool) : k_(&kernels), pool_(&pool) {}

  std::string_view name() const override { return "cpu"; }
  int n_threads() const override { return pool_->size(); }
  DeviceMemory& memory() override { return host_memory(); }
  Status load_weights(const model::Weights& /*weights*/) override { return {}; }

  void begin_step(const model::Batch& batch) override;
  void end_step() override { step_ = nullptr; }

  void embed(const model::EmbedOp& op) override;
  void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t d,
                float eps) override;
  void matmul(const kernels::WeightView& w, const float* x, int64_t ldx, int64_t m, float* y,
              int64_t ldy) override;
  void matmul_group(std::span<const kernels::MatmulTarget> targets, const float* x, int64_t ldx,
                    int64_t m) override;
  void attention_input(const model::AttentionInputOp& op) override;
  void attention(const model::AttentionOp& a, const float* q_gate) override;
  void residual(const model::ResidualOp& op) override;
  void gated_ffn(const model::GatedFfn& w, const float* x, int64_t ldx, int64_t m,
                 float* gate_buf, float* up_buf, float* out, int64_t ldo) override;
  void moe_ffn(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t il, int64_t m,
               model::Workspace& ws, float* out) override;
  void begin_recurrent(kv::RecurrentState& states, model::Workspace& ws) override;
  void gated_delta_net(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t il,
                       kv::RecurrentState& states, model::Workspace& ws) override;
  void end_recurrent(kv::RecurrentState& states) override;
  void copy_rows(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows,
                 int64_t width) override;
  void previous_rows(const float* rows, const float* prev, float* out, int64_t d) override;
  void keep_output_rows(std::span<const model::RowBuffer> buffers) override;
  void scale(float* x, int64_t rows, int64_t n, float s) override;
  void geglu(const float* gate, const float* up, float* out, int64_t rows, int64_t n) override;
  void per_layer_inputs(const model::PerLayerInputOp& op) override;
  void softcap(float* z, int64_t rows, int64_t n, float cap) override;

 private:
  const kernels::Kernels* k_;
  ThreadPool* pool_;
  const model::Batch* step_ = nullptr;
  int64_t step_max_context_ = 0;     // the step's longest sequence context (its attention scratch)
  std::vector<float> attn_scratch_;  // the attention's per-thread scratch, grown as contexts grow
};

}  // namespace ridge::backend
