// File-to-file quantization (`ridge quantize`): reads an F32/F16/BF16 GGUF model, picks every
// tensor's type with the mixture rules of model/quant_mix.h, and writes a GGUF file that
// llama.cpp and ridge load: all metadata copied, general.file_type set to the mixture,
// general.quantization_version = 2. Rows are converted in parallel, tensor by tensor, while the
// file is written, so memory stays at one output tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/writer.h"
#include "offline/quant_mix.h"
#include "tensor/ggml_type.h"

namespace ridge::gguf {
class File;
}

namespace ridge::offline {

using model::ModelConfig;

// Per-column importance of a weight's input (an importance matrix's in_sum2 / count, normalised
// to mean 1 with a small floor), one vector per matrix of a 3-D weight (empty: that matrix has
// none, e.g. an expert the calibration text never routed to). By tensor name.
struct ColumnImportance {
  int64_t n_cols = 0;
  std::vector<std::vector<float>> matrices;
};
using ImportanceMap = std::map<std::string, ColumnImportance>;

struct QuantizeOptions {
  MixOptions mix;  // mix.imatrix is implied by `importance`
  int n_threads = 1;
  // Weights for the quantizers' scale searches (kernels::quantize_row_weighted); null: none.
  const ImportanceMap* importance = nullptr;
  // Only the plan is wanted (--dry-run): a tensor that would need an importance matrix it lacks is
  // noted in QuantizePlan::needs_imatrix instead of refused.
  bool dry_run = false;
};

struct TensorPlan {
  std::string name;
  std::vector<uint64_t> shape;  // ggml order
  GgmlType from = GgmlType::kF32;
  TensorChoice choice;          // choice.type is what is written
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  const ColumnImportance* importance = nullptr;  // weights its rows are quantized with
};

struct QuantizePlan {
  QuantMix mix = QuantMix::kQ8_0;
  std::vector<TensorPlan> tensors;  // in the input's order (the output keeps it)
  uint64_t bytes_in = 0;            // tensor data only
  uint64_t bytes_out = 0;
  uint64_t n_elements = 0;          // all tensors
  int64_t n_fallback = 0;           // tensors whose row length forced another type
  int64_t n_overridden = 0;
  int64_t n_weighted = 0;           // tensors quantized with importance weights
  std::vector<std::string> unweighted;  // quantized tensors the importance map has no entry for
  // The first tensor written in a type that needs an importance matrix (type_needs_imatrix) while
  // none is given (neither mix.imatrix nor importance), or the given one has no entry for it; only
  // in a dry-run plan, which is not refused. Empty: none.
  std::string needs_imatrix;

  double bits_per_weight_out() const {
    return n_elements ? 8.0 * static_cast<double>(bytes_out) / static_cast<double>(n_elements) : 0.0;
  }
};

// The type and size of every tensor. A 3-D tensor (a stack of experts [cols, rows, n_expert]) is
// converted row by row like a matrix of shape[1] * shape[2] rows. Errors: an input that is already
// quantized, a tensor type that cannot be converted, a split file, a bad override pattern, an FFN
// tensor of a mixture-of-experts model without a valid layer number (llama.cpp stops there too),
// importance whose columns or matrices do not match its tensor's, and (unless opt.dry_run, as
// llama.cpp) a tensor written as iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s or iq3_xxs (other than the
// embedding and the head) without an importance matrix, or without an entry for it in the one
// given: one line that names `ridge imatrix`.
Result<QuantizePlan> plan_quantization(const gguf::File& in, const QuantizeOptions& opt);

// Fills `w` with the input's metadata (general.file_type, general.quantization_version updated)
// and every tensor of `plan`, converted lazily when `w` writes. `in` must outlive the write.
// The output bytes do not depend on n_threads. An error (before anything is written) when the
// plan has a type the kernels cannot quantize to (kernels::can_quantize).
Status add_quantized_model(const gguf::File& in, const QuantizePlan& plan, int n_threads, gguf::Writer& w);

// Converts `n` f32 values to one row of `type` at dst (any writable type; n a multiple of its
// block size); w (n weights, or null) for the quantizers' scale searches
// (kernels::quantize_row_weighted; float types ignore it).
void encode_row(GgmlType type, const float* src, void* dst, int64_t n, const float* w = nullptr);
// Reads one row of n F32/F16/BF16 values into f32.
void decode_float_row(GgmlType type, const void* src, float* dst, int64_t n);

}  // namespace ridge::offline
