// A second backend, for the tests only: every op of model/backend.h as a plain single-threaded
// scalar loop (float, the formulas as written), sharing no code with backend::CpuBackend. It is a
// folder and a registration: scalar_backend.cpp registers it as "test-scalar" from a static
// initializer, and the tests create it by name (backend/registry.h).
//
// Its memory (the workspace, the KV cache, the recurrent state a runner makes for it, and its
// copy of the weights) is GuardedMemory: inaccessible outside its ops, as a GPU's memory is to
// host code, so a forward through it also checks that nothing but the backend touches the
// backend's memory. The whole ops (MoE FFN, Gated DeltaNet) run the model's host code and read
// the model's own weights.
//
// Weights are read row by row through the ref kernel table (kernels::dequantize_weight_row), so a
// model it runs must be bound for kernels_for(Isa::kRef) (its weights then stay in GGUF's row
// order, which the whole ops below need too); create_backend refuses another table.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "backend/weight_copies.h"
#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "model/backend.h"

namespace ridge::backend::testing {

inline constexpr std::string_view kScalarBackendName = "test-scalar";

class ScalarBackend final : public model::Backend {
 public:
  ScalarBackend();

  std::string_view name() const override { return kScalarBackendName; }
  int n_threads() const override { return 1; }
  // Memory that host code outside the ops cannot touch (guarded_memory.h).
  DeviceMemory& memory() override;
  // Copies every region into the guarded memory; the ops then read those copies (a weight
  // pointer they are given that no region holds is read in place, as the caller's host memory;
  // in strict mode an abort).
  Status load_weights(const model::Weights& weights) override;

  void begin_step(const model::Batch& batch) override { step_ = &batch; }
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
  void gated_ffn(const model::GatedFfn& w, const float* x, int64_t ldx, int64_t m, float* gate_buf,
                 float* up_buf, float* out, int64_t ldo) override;
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
  void softcap(float* z, int64_t rows, int64_t n, float cap) override;
  void scale(float* x, int64_t rows, int64_t n, float s) override;
  void geglu(const float* gate, const float* up, float* out, int64_t rows, int64_t n) override;
  void per_layer_inputs(const model::PerLayerInputOp& op) override;

 private:
  // The backend's copy of the weight at host address p (null: null).
  template <class T>
  const T* loaded(const T* p) const {
    return static_cast<const T*>(loaded_bytes(p));
  }
  const void* loaded_bytes(const void* p) const;
  kernels::WeightView loaded(const kernels::WeightView& w) const;

  WeightCopies weights_;  // in the guarded memory
  const kernels::Kernels* ref_;  // the ref table: weight rows, and the whole ops below
  ThreadPool pool_;              // one thread, for the whole ops only
  const model::Batch* step_ = nullptr;
};

}  // namespace ridge::backend::testing
