#include "backend/cuda/cuda_backend.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "backend/cuda/bandwidth.h"
#include "kv/kv_cache.h"
#include "model/ffn.h"
#include "model/ops.h"

namespace ridge::backend::cuda {

static_assert(static_cast<int>(kv::KvType::kF32) == static_cast<int>(KvStore::kF32));
static_assert(static_cast<int>(kv::KvType::kF16) == static_cast<int>(KvStore::kF16));
static_assert(static_cast<int>(kv::KvType::kBF16) == static_cast<int>(KvStore::kBF16));
static_assert(static_cast<int>(kv::KvType::kQ8_0) == static_cast<int>(KvStore::kQ8_0));

Status check_model_supported(const model::ModelConfig& cfg) {
  const auto refuse = [&](std::string_view what) {
    return usage_error("backend cuda: {} ({}) has {}, which the CUDA backend does not run yet; use "
                       "--device cpu", cfg.name, cfg.arch, what);
  };
  if (cfg.is_moe()) return refuse("a mixture-of-experts FFN");
  if (cfg.is_hybrid()) return refuse("Gated DeltaNet layers");
  if (cfg.n_embd_per_layer > 0) return refuse("per-layer inputs");
  if (cfg.head_dim > kMaxHeadDim || cfg.head_dim_swa > kMaxHeadDim) {
    return refuse(fmt::format("head_dim {} (at most {})", std::max(cfg.head_dim, cfg.head_dim_swa), kMaxHeadDim));
  }
  return ok_status();
}

Result<DeviceMemory*> backend_memory(int device) {
  RIDGE_ASSIGN_OR_RETURN(CudaMemory * m, memory_of(device));
  return static_cast<DeviceMemory*>(m);
}

Result<DeviceBandwidth> probe_bandwidth(int device, uint64_t buffer_bytes, int repetitions) {
  RIDGE_ASSIGN_OR_RETURN(CudaMemory * mem, memory_of(device));
  if (buffer_bytes < (1u << 20) || repetitions < 1) return usage_error("probe: at least 1 MiB and 1 pass");
  if (buffer_bytes > mem->available_bytes() / 2) {
    return usage_error("probe: a buffer of {} MiB is more than half of the GPU's free {} MiB", buffer_bytes >> 20,
                       mem->available_bytes() >> 20);
  }
  RIDGE_CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  RIDGE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const BandwidthTimes t = time_bandwidth(buffer_bytes, repetitions);
  if (t.error != 0) {
    return error("probe: {}", cudaGetErrorString(static_cast<cudaError_t>(t.error)));
  }
  DeviceBandwidth b;
  b.device = prop.name;
  const double bytes = static_cast<double>(buffer_bytes / 32 * 32);
  b.read_gbs = t.read_ms > 0 ? bytes / (t.read_ms * 1e6) : 0;
  b.copy_gbs = t.copy_ms > 0 ? bytes / (t.copy_ms * 1e6) : 0;  // half read, half written
  b.buffer_bytes = buffer_bytes;
  b.repetitions = repetitions;
  return b;
}

Result<std::unique_ptr<model::Backend>> make_backend(const BackendParams& p) {
  if (p.kernels != nullptr && p.kernels->isa != kernels::Isa::kRef) {
    return error("backend cuda: reads weights in GGUF's row layout; bind the model for "
                 "kernels_for(ref), not {}", kernels::isa_name(p.kernels->isa));
  }
  if (p.config != nullptr) RIDGE_RETURN_IF_ERROR(check_model_supported(*p.config));
  RIDGE_ASSIGN_OR_RETURN(CudaMemory * mem, memory_of(p.device));
  return std::unique_ptr<model::Backend>(std::make_unique<CudaBackend>(*mem));
}

CudaBackend::CudaBackend(CudaMemory& memory) : memory_(&memory) {
  RIDGE_CUDA_CHECK(cudaSetDevice(memory.device()));
  RIDGE_CUDA_CHECK(cudaStreamCreate(&stream_));  // blocking: the memory's copies order after it
}

CudaBackend::~CudaBackend() {
  if (stream_ != nullptr) {
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamDestroy(stream_);
  }
}

void CudaBackend::check_launch(const char* op) const {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "ridge: fatal: cuda %s: %s\n", op, cudaGetErrorString(err));
    std::abort();
  }
}

Status CudaBackend::load_weights(const model::Weights& weights) {
  RIDGE_RETURN_IF_ERROR(weights_.load(weights, *memory_));
  const size_t table_bytes = 65536 * sizeof(float);
  RIDGE_ASSIGN_OR_RETURN(gelu_table_, memory_->allocate(table_bytes, MemoryUse::kScratch));
  memory_->to_device(gelu_table_.get(), model::gelu_f16_table(), table_bytes);
  return ok_status();
}

const void* CudaBackend::loaded_bytes(const void* p) const {
  const void* copy = weights_.find(p);
  return copy != nullptr ? copy : p;
}

DeviceMatrix CudaBackend::device_matrix(const kernels::WeightView& w) const {
  if (w.layout != kernels::WeightLayout::kRows || !matmul_supports(w.type)) {
    std::fprintf(stderr, "ridge: fatal: cuda matmul: weight type %s is not supported\n",
                 std::string(ggml_type_name(w.type)).c_str());
    std::abort();
  }
  return DeviceMatrix{w.type, loaded_bytes(w.data), w.rows, w.cols, w.row_bytes};
}

namespace {

// Whether a layer's K/V are in the cache's window space (its own slots and block tables).
bool in_window(const kv::KvCache& cache, int64_t layer) { return cache.space_of(layer) == kv::KvSpace::kWindow; }

}  // namespace

KvLayer kv_layer_of(const kv::KvCache& cache, int64_t layer) {
  const kv::KvLayerShape shape = cache.config().layer(layer);
  KvLayer l;
  l.k = static_cast<uint8_t*>(const_cast<void*>(cache.k_block(layer, 0, 0)));
  l.v = static_cast<uint8_t*>(const_cast<void*>(cache.v_block(layer, 0, 0)));
  l.row_bytes = static_cast<int64_t>(cache.row_bytes(layer));
  l.block_size = cache.block_size();
  l.head_stride = l.block_size * l.row_bytes;
  l.block_stride = shape.n_head_kv * l.head_stride;
  l.type = static_cast<KvStore>(cache.type());
  return l;
}

template <class T>
T* CudaBackend::upload(DeviceBuffer& buf, std::span<const T> v) {
  const size_t bytes = v.size() * sizeof(T);
  if (bytes == 0) return nullptr;
  if (buf.bytes() < bytes) {
    auto grown = memory_->allocate(std::max(bytes, 2 * buf.bytes()), MemoryUse::kScratch);
    if (!grown.ok()) {
      std::fprintf(stderr, "ridge: fatal: %s\n", grown.status().message().c_str());
      std::abort();
    }
    buf = std::move(grown).value();
  }
  memory_->to_device(buf.get(), v.data(), bytes);
  return static_cast<T*>(buf.get());
}

void CudaBackend::begin_step(const model::Batch& b) {
  step_ = &b;
  view_.n_tokens = b.n_tokens();
  upload(tokens_, std::span<const int32_t>(b.tokens));
  view_.positions = upload(positions_, std::span<const int32_t>(b.positions));
  view_.seq_index = upload(seq_index_, std::span<const int32_t>(b.seq_index));
  view_.block_offsets = upload(block_offsets_, std::span<const int32_t>(b.block_offsets));
  upload(slots_, std::span<const int64_t>(b.slots));
  upload(window_slots_, std::span<const int64_t>(b.window_slots));
  upload(block_ids_, std::span<const int32_t>(b.block_ids));
  upload(window_block_ids_, std::span<const int32_t>(b.window_block_ids));
  std::vector<int32_t> kept;
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    if (b.need_logits[static_cast<size_t>(t)] != 0) kept.push_back(static_cast<int32_t>(t));
  }
  n_kept_ = static_cast<int64_t>(kept.size());
  upload(kept_rows_, std::span<const int32_t>(kept));
}

void CudaBackend::end_step() {
  RIDGE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  step_ = nullptr;
}

void CudaBackend::embed(const model::EmbedOp& op) {
  const model::Batch& b = *step_;
  launch_get_rows(device_matrix(*op.table), static_cast<const int32_t*>(tokens_.get()), b.n_tokens(),
                  op.scale, op.x, stream_);
  check_launch("embed");
  if (op.cos == nullptr) return;
  // The rotary tables are the model's definition (model::rope_cos_sin), made here on the host.
  const model::ModelConfig& cfg = *op.cfg;
  const auto tables = [&](int64_t dims, float theta, float freq_scale, const float* factors,
                          float* cos, float* sin) {
    const int64_t half = dims / 2;
    host_cos_.resize(static_cast<size_t>(b.n_tokens() * half));
    host_sin_.resize(host_cos_.size());
    for (int64_t t = 0; t < b.n_tokens(); ++t) {
      model::rope_cos_sin(dims, theta, freq_scale, factors, *op.yarn, b.positions[static_cast<size_t>(t)],
                          host_cos_.data() + t * half, host_sin_.data() + t * half);
    }
    memory_->to_device(cos, host_cos_.data(), host_cos_.size() * sizeof(float));
    memory_->to_device(sin, host_sin_.data(), host_sin_.size() * sizeof(float));
  };
  tables(cfg.rope_dims, cfg.rope_theta, cfg.rope_freq_scale, op.rope_factors, op.cos, op.sin);
  if (op.cos_swa != nullptr) {
    tables(cfg.swa_rope_dims(), cfg.swa_rope_theta(), cfg.swa_rope_freq_scale(), op.rope_factors_swa,
           op.cos_swa, op.sin_swa);
  }
}

void CudaBackend::rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t d,
                           float eps) {
  launch_rms_norm(x, loaded(w), y, rows, d, eps, stream_);
  check_launch("rms_norm");
}

void CudaBackend::matmul(const kernels::WeightView& w, const float* x, int64_t ldx, int64_t m,
                         float* y, int64_t ldy) {
  launch_matmul(device_matrix(w), x, ldx, m, y, ldy, stream_);
  check_launch("matmul");
}

void CudaBackend::matmul_group(std::span<const kernels::MatmulTarget> targets, const float* x,
                               int64_t ldx, int64_t m) {
  for (const kernels::MatmulTarget& t : targets) matmul(*t.w, x, ldx, m, t.y, t.ldy);
}

void CudaBackend::attention_input(const model::AttentionInputOp& op) {
  AttentionInputArgs a;
  a.n_tokens = step_->n_tokens();
  a.q = op.q;
  a.k = op.k;
  a.v = op.v;
  a.q_gate = op.q_gate;
  a.bq = loaded(op.bq);
  a.bk = loaded(op.bk);
  a.bv = loaded(op.bv);
  a.q_norm = loaded(op.q_norm);
  a.k_norm = loaded(op.k_norm);
  a.v_from_k = op.v_from_k;
  a.v_norm = op.v_norm;
  a.n_head = op.n_head;
  a.n_head_kv = op.n_head_kv;
  a.head_dim = op.head_dim;
  a.eps = op.eps;
  a.rope_dims = op.rope_dims;
  a.neox = op.rope_layout == model::RopeLayout::kNeox;
  a.cos = op.cos;
  a.sin = op.sin;
  if (op.cache != nullptr) {
    a.slots = static_cast<const int64_t*>(in_window(*op.cache, op.kv_layer) ? window_slots_.get() : slots_.get());
    a.kv = kv_layer_of(*op.cache, op.kv_layer);
  }
  launch_attention_input(a, stream_);
  check_launch("attention_input");
}

void CudaBackend::attention(const model::AttentionOp& op, const float* q_gate) {
  AttentionArgs a;
  a.step = view_;
  a.block_ids = static_cast<const int32_t*>(in_window(*op.cache, op.layer) ? window_block_ids_.get() : block_ids_.get());
  a.kv = kv_layer_of(*op.cache, op.layer);
  a.q = op.q;
  a.out = op.out;
  a.q_gate = q_gate;
  a.sinks = loaded(op.sinks);
  a.n_head = op.n_head;
  a.n_head_kv = op.n_head_kv;
  a.head_dim = op.head_dim;
  a.scale = op.scale;
  a.window = op.window;
  a.softcap = op.softcap;
  launch_attention(a, stream_);
  check_launch("attention");
}

void CudaBackend::residual(const model::ResidualOp& op) {
  ResidualArgs a{op.m, op.d, op.eps, op.proj, loaded(op.bias), loaded(op.post_norm), op.x,
                 loaded(op.next_norm), op.xn};
  launch_residual(a, stream_);
  check_launch("residual");
}

void CudaBackend::gated_ffn(const model::GatedFfn& w, const float* x, int64_t ldx, int64_t m,
                            float* gate_buf, float* up_buf, float* out, int64_t ldo) {
  const int64_t ff = w.gate->rows;
  matmul(*w.gate, x, ldx, m, gate_buf, ff);
  matmul(*w.up, x, ldx, m, up_buf, ff);
  const Activation act = w.act == model::FfnActivation::kGeglu       ? Activation::kGeglu
                         : w.act == model::FfnActivation::kSwigluOai ? Activation::kSwigluOai
                                                                     : Activation::kSwiglu;
  launch_gated_activation(act, gate_buf, up_buf, loaded(w.gate_bias), loaded(w.up_bias),
                          static_cast<const float*>(gelu_table_.get()), m, ff, stream_);
  check_launch("gated_ffn activation");
  matmul(*w.down, gate_buf, ff, m, out, ldo);
  if (w.down_bias != nullptr) {
    launch_add_bias(out, ldo, loaded(w.down_bias), m, w.down->rows, stream_);
    check_launch("gated_ffn bias");
  }
}

namespace {

[[noreturn]] void not_supported(const char* op) {
  std::fprintf(stderr, "ridge: fatal: the cuda backend has no %s (check_model_supported refuses such models)\n", op);
  std::abort();
}

}  // namespace

void CudaBackend::moe_ffn(const model::ModelConfig&, const model::LayerWeights&, int64_t, int64_t,
                          model::Workspace&, float*) {
  not_supported("mixture-of-experts FFN");
}
void CudaBackend::begin_recurrent(kv::RecurrentState&, model::Workspace&) { not_supported("recurrent state"); }
void CudaBackend::gated_delta_net(const model::ModelConfig&, const model::LayerWeights&, int64_t,
                                  kv::RecurrentState&, model::Workspace&) {
  not_supported("Gated DeltaNet layer");
}
void CudaBackend::end_recurrent(kv::RecurrentState&) { not_supported("recurrent state"); }
void CudaBackend::per_layer_inputs(const model::PerLayerInputOp&) { not_supported("per-layer inputs"); }

void CudaBackend::copy_rows(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows,
                            int64_t width) {
  if (rows <= 0 || width <= 0) return;
  RIDGE_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<size_t>(ldd) * sizeof(float), src,
                                     static_cast<size_t>(lds) * sizeof(float),
                                     static_cast<size_t>(width) * sizeof(float), static_cast<size_t>(rows),
                                     cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::previous_rows(const float* rows, const float* prev, float* out, int64_t d) {
  const float* prev_dev = nullptr;
  if (prev != nullptr) {
    prev_dev = upload(prev_rows_, std::span<const float>(prev, static_cast<size_t>(step_->n_seqs() * d)));
  }
  launch_previous_rows(rows, prev_dev, out, d, view_, stream_);
  check_launch("previous_rows");
}

void CudaBackend::keep_output_rows(std::span<const model::RowBuffer> buffers) {
  for (const model::RowBuffer& r : buffers) {
    launch_gather_rows_in_place(r.data, r.width, static_cast<const int32_t*>(kept_rows_.get()), n_kept_,
                                stream_);
  }
  check_launch("keep_output_rows");
}

void CudaBackend::softcap(float* z, int64_t rows, int64_t n, float cap) {
  launch_softcap(z, rows * n, cap, stream_);
  check_launch("softcap");
}

void CudaBackend::scale(float* x, int64_t rows, int64_t n, float s) {
  launch_scale(x, rows * n, s, stream_);
  check_launch("scale");
}

void CudaBackend::geglu(const float* gate, const float* up, float* out, int64_t rows, int64_t n) {
  launch_geglu(gate, up, out, static_cast<const float*>(gelu_table_.get()), rows * n, stream_);
  check_launch("geglu");
}

}  // namespace ridge::backend::cuda
