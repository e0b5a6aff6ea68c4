#include "offline/quantize.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "base/thread_pool.h"
#include "gguf/reader.h"
#include "kernels/quant/quants.h"
#include "tensor/fp16.h"
#include "tensor/fp16_row.h"

namespace ridge::offline {
namespace {

bool is_float_type(GgmlType t) { return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16; }

// The hyper-parameters the rules need, from `<arch>.*` metadata (missing keys: counted from the
// tensor names, or llama.cpp's defaults).
Result<MixModel> mix_model_from_gguf(const gguf::File& in) {
  MixModel m;
  m.arch = in.architecture();
  const std::string a = m.arch;
  RIDGE_ASSIGN_OR_RETURN(m.n_layer, in.get_int_or(a + ".block_count", -1));
  if (m.n_layer < 0) {
    m.n_layer = 0;
    for (const auto& t : in.tensors()) {
      int64_t l = -1;
      if (std::sscanf(t.name.c_str(), "blk.%ld.", &l) == 1) m.n_layer = std::max(m.n_layer, l + 1);
    }
  }
  // Per-layer head counts are arrays in some architectures: then the rules' GQA test uses 1.
  auto head_count = [&](const std::string& key) -> int64_t {
    auto r = in.get_int_or(key, 0);
    return r.ok() ? *r : 0;
  };
  m.n_head = head_count(a + ".attention.head_count");
  m.n_head_kv = head_count(a + ".attention.head_count_kv");
  if (m.n_head_kv == 0) m.n_head_kv = m.n_head;
  RIDGE_ASSIGN_OR_RETURN(m.n_expert, in.get_int_or(a + ".expert_count", 0));
  return m;
}

// Converts the rows of one tensor in parallel: rows are handed out in chunks from a shared
// counter, and each row's bytes depend only on that row, so the output ignores the thread count.
Status convert_tensor(const gguf::TensorInfo& src, GgmlType to, std::span<uint8_t> dst, ThreadPool& pool,
                      const ColumnImportance* importance) {
  const int64_t cols = static_cast<int64_t>(src.cols());
  const int64_t rows = static_cast<int64_t>(src.rows());
  // Row r of a 3-D tensor belongs to matrix r / rows_per_matrix.
  const int64_t rows_per_matrix = src.shape.size() > 1 ? static_cast<int64_t>(src.shape[1]) : 1;
  const auto weights_of = [&](int64_t r) -> const float* {
    if (importance == nullptr) return nullptr;
    const auto& v = importance->matrices[static_cast<size_t>(r / rows_per_matrix)];
    return v.empty() ? nullptr : v.data();
  };
  const uint64_t in_row = src.n_bytes / static_cast<uint64_t>(std::max<int64_t>(rows, 1));
  const uint64_t out_row = *ggml_row_bytes(to, static_cast<uint64_t>(cols));
  RIDGE_CHECK(out_row * static_cast<uint64_t>(rows) == dst.size());
  const int64_t chunk = std::max<int64_t>(1, 65536 / std::max<int64_t>(cols, 1));
  std::atomic<int64_t> next{0};
  pool.run([&](int, int) {
    std::vector<float> buf(static_cast<size_t>(cols));
    for (;;) {
      const int64_t r0 = next.fetch_add(chunk);
      if (r0 >= rows) break;
      for (int64_t r = r0; r < std::min(rows, r0 + chunk); ++r) {
        decode_float_row(src.type, src.data + static_cast<uint64_t>(r) * in_row, buf.data(), cols);
        encode_row(to, buf.data(), dst.data() + static_cast<uint64_t>(r) * out_row, cols, weights_of(r));
      }
    }
  });
  return ok_status();
}

// The one-line refusal of a plan that writes `type` in `tensor` without the importance matrix it
// needs (llama.cpp: "this quantization requires an importance matrix!").
Status missing_imatrix(const gguf::File& in, QuantMix mix, bool have_imatrix,
                       const std::string& tensor, const TensorChoice& c) {
  const std::string make =
      fmt::format("make one with `ridge imatrix -m {} -f TEXT.txt -o imatrix.gguf`", in.path());
  const std::string_view type = ggml_type_name(c.type);
  if (!have_imatrix) {
    const std::string_view by = c.overridden ? std::string_view("--tensor-type") : quant_mix_info(mix).name;
    return usage_error("{}: {} writes '{}' as {}, which needs an importance matrix: {} and pass "
                       "--imatrix imatrix.gguf", in.path(), by, tensor, type, make);
  }
  return usage_error("{}: the importance matrix has no entry for '{}', which would be {} and needs one: {}",
                     in.path(), tensor, type, make);
}

}  // namespace

void decode_float_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  switch (type) {
    case GgmlType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
      return;
    default: RIDGE_CHECK(false);
  }
}

void encode_row(GgmlType type, const float* src, void* dst, int64_t n, const float* w) {
  auto* h = static_cast<uint16_t*>(dst);
  switch (type) {
    case GgmlType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case GgmlType::kF16: f32_to_fp16_row(src, dst, n); return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
      return;
    default:
      RIDGE_CHECK(kernels::can_quantize(type));
      kernels::quantize_row_weighted(type, src, dst, n, w);
  }
}

Result<QuantizePlan> plan_quantization(const gguf::File& in, const QuantizeOptions& opt) {
  RIDGE_ASSIGN_OR_RETURN(int64_t n_split, in.get_int_or("split.count", 1));
  if (n_split > 1) {
    return error("{}: part of a split model ({} files); merge it first (llama-gguf-split --merge)", in.path(), n_split);
  }
  RIDGE_ASSIGN_OR_RETURN(MixModel model, mix_model_from_gguf(in));
  std::vector<TensorDesc> descs;
  descs.reserve(in.tensors().size());
  for (const auto& t : in.tensors()) descs.push_back(TensorDesc{t.name, t.shape, t.type});
  MixOptions mix = opt.mix;
  mix.imatrix = mix.imatrix || opt.importance != nullptr;  // the rules and the refusal below
  auto chosen = choose_tensor_types(descs, model, mix);
  if (!chosen.ok()) return chosen.status().with_prefix(in.path());

  QuantizePlan plan;
  plan.mix = opt.mix.mix;
  for (size_t i = 0; i < descs.size(); ++i) {
    const gguf::TensorInfo& t = in.tensors()[i];
    const TensorChoice& c = (*chosen)[i];
    if (c.convert && !is_float_type(t.type)) {
      return error("{}: already quantized (tensor '{}' is {}); ridge quantize needs an F32, F16 or BF16 model",
                   in.path(), t.name, ggml_type_name(t.type));
    }
    if (c.convert && type_needs_imatrix(t.name, c.type) &&
        (!mix.imatrix || (opt.importance != nullptr && !opt.importance->contains(t.name)))) {
      if (!opt.dry_run) return missing_imatrix(in, opt.mix.mix, mix.imatrix, t.name, c);
      if (plan.needs_imatrix.empty()) plan.needs_imatrix = t.name;
    }
    TensorPlan p{t.name, t.shape, t.type, c, t.n_bytes, t.n_bytes};
    if (c.convert) {
      auto row = ggml_row_bytes(c.type, t.cols());
      if (!row) return error("{}: tensor '{}': {} columns do not fit {}", in.path(), t.name, t.cols(), ggml_type_name(c.type));
      p.bytes_out = *row * t.rows();
    }
    if (c.convert && opt.importance != nullptr && kernels::can_quantize(c.type)) {
      const auto it = opt.importance->find(t.name);
      if (it == opt.importance->end()) {
        plan.unweighted.push_back(t.name);
      } else {
        const uint64_t n_mat = t.shape.size() > 2 ? t.shape[2] : 1;
        if (static_cast<uint64_t>(it->second.n_cols) != t.cols() || it->second.matrices.size() != n_mat) {
          return usage_error("{}: the importance matrix has {} columns x {} matrices for '{}', the tensor {} x {}",
                             in.path(), it->second.n_cols, it->second.matrices.size(), t.name, t.cols(), n_mat);
        }
        p.importance = &it->second;
        plan.n_weighted += 1;
      }
    }
    plan.bytes_in += p.bytes_in;
    plan.bytes_out += p.bytes_out;
    plan.n_elements += t.n_elements;
    plan.n_fallback += c.fell_back() ? 1 : 0;
    plan.n_overridden += c.overridden ? 1 : 0;
    plan.tensors.push_back(std::move(p));
  }
  return plan;
}

Status add_quantized_model(const gguf::File& in, const QuantizePlan& plan, int n_threads, gguf::Writer& w) {
  RIDGE_CHECK(plan.tensors.size() == in.tensors().size());
  for (const auto& [key, value] : in.metadata()) w.set(key, value);
  w.set("general.quantization_version", gguf::make_u32(2));
  w.set("general.file_type", gguf::make_u32(quant_mix_info(plan.mix).file_type));

  for (const TensorPlan& p : plan.tensors) {
    if (p.choice.convert && !is_float_type(p.choice.type) && p.choice.type != p.from &&
        !kernels::can_quantize(p.choice.type)) {
      return error("{}: tensor '{}': ridge cannot quantize to {} yet (no quantizer in kernels/quant)",
                   in.path(), p.name, ggml_type_name(p.choice.type));
    }
  }
  auto pool = std::make_shared<ThreadPool>(std::max(1, n_threads));
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& p = plan.tensors[i];
    const gguf::TensorInfo* src = &in.tensors()[i];
    RIDGE_CHECK(src->name == p.name);
    const GgmlType to = p.choice.type;
    if (!p.choice.convert || to == src->type) {
      // Copied from the mapping at write time (no copy of the whole model in memory).
      RIDGE_RETURN_IF_ERROR(w.add_tensor(p.name, src->type, p.shape, [src](std::span<uint8_t> dst) {
        RIDGE_CHECK(dst.size() == src->n_bytes);
        std::memcpy(dst.data(), src->data, dst.size());
        return ok_status();
      }));
      continue;
    }
    RIDGE_RETURN_IF_ERROR(w.add_tensor(p.name, to, p.shape, [src, to, pool, imp = p.importance](std::span<uint8_t> dst) {
      return convert_tensor(*src, to, dst, *pool, imp);
    }));
  }
  return ok_status();
}

}  // namespace ridge::offline
