// The CUDA backend: the forward's ops as kernels on one GPU (src/backend/cuda/*.cu), on one
// stream. Its memory is the device's (cuda_memory.h): the workspace, the KV cache and its copy of
// the weights, uploaded once by load_weights in GGUF's row layout (a model it runs is bound for
// the ref kernel table, as the test backend's). begin_step uploads the step's token metadata; an
// op's host-side work is launching kernels.
//
// It runs the dense decoder architectures (llama, qwen2, qwen3, gemma 2/3's ops): the mixture of
// experts, the Gated DeltaNet layers and Gemma 4's per-layer inputs are refused when the backend
// is made for such a model (registry BackendParams::config).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/matmul.h"
#include "backend/cuda/ops.h"
#include "backend/registry.h"
#include "backend/weight_copies.h"
#include "model/backend.h"

namespace ridge::backend::cuda {

inline constexpr std::string_view kCudaBackendName = "cuda";

// The registry's factory and memory for "cuda" (backend/registry.cpp registers them).
Result<std::unique_ptr<model::Backend>> make_backend(const BackendParams& params);
Result<DeviceMemory*> backend_memory(int device);
// Device `device`'s read and copy bandwidth (bandwidth.h) through a buffer of buffer_bytes.
Result<DeviceBandwidth> probe_bandwidth(int device, uint64_t buffer_bytes, int repetitions);
// Layer `layer` of a paged KV cache as the kernels address it (ops.h KvLayer).
KvLayer kv_layer_of(const kv::KvCache& cache, int64_t layer);
// Why a model cannot run on this backend (an architecture it lacks, a weight type its matmul
// does not read), or ok.
Status check_model_supported(const model::ModelConfig& cfg);

class CudaBackend final : public model::Backend {
 public:
  explicit CudaBackend(CudaMemory& memory);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return kCudaBackendName; }
  int n_threads() const override { return 1; }
  DeviceMemory& memory() override { return *memory_; }
  Status load_weights(const model::Weights& weights) override;

  void begin_step(const model::Batch& batch) override;
  void end_step() override;

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
  // The device copy of host weight bytes at p (null: null); a pointer no loaded region holds is
  // taken to be device memory already (an op test's own).
  const void* loaded_bytes(const void* p) const;
  template <class T>
  const T* loaded(const T* p) const {
    return static_cast<const T*>(loaded_bytes(p));
  }
  DeviceMatrix device_matrix(const kernels::WeightView& w) const;
  // A step array on the device, grown as needed.
  template <class T>
  T* upload(DeviceBuffer& buf, std::span<const T> v);
  void check_launch(const char* op) const;

  CudaMemory* memory_;
  cudaStream_t stream_ = nullptr;
  WeightCopies weights_;
  DeviceBuffer gelu_table_;                        // model::gelu_f16_table on the device

  // The step (begin_step .. end_step).
  const model::Batch* step_ = nullptr;
  StepView view_;
  DeviceBuffer tokens_, positions_, seq_index_, slots_, window_slots_, block_ids_,
      window_block_ids_, block_offsets_, kept_rows_, prev_rows_;
  int64_t n_kept_ = 0;
  std::vector<float> host_cos_, host_sin_;
};

}  // namespace ridge::backend::cuda
