// Importance matrices (llama.cpp's tools/imatrix, its GGUF file): for every matrix multiplication
// of a `blk.*` weight (and `output.weight` when asked) whose input has at least 16 rows, the sum
// over input rows x of x_j^2 per input column j, and the number of rows. The text is run in
// chunks of n_ctx as for perplexity (quality/perplexity.h: BOS at each chunk's start). The
// quantizer weighs each column's rounding error by these sums (K and IQ formats).
//
// File (GGUF): general.type "imatrix", imatrix.datasets (the text files), imatrix.chunk_count and
// imatrix.chunk_size (u32); per weight, sorted by name, "<weight>.in_sum2" (f32, [cols, n_mat]:
// n_mat the experts of a 3-D weight, else 1) and "<weight>.counts" (f32, [1, n_mat]).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kv/kv_type.h"
#include "model/model.h"
#include "offline/quantize.h"

namespace ridge::quality {

struct ImatrixEntry {
  int64_t n_cols = 0;
  std::vector<float> in_sum2;   // [n_mat][n_cols]
  std::vector<int64_t> counts;  // [n_mat] input rows summed
};

struct Imatrix {
  std::map<std::string, ImatrixEntry> entries;  // by weight name
  std::vector<std::string> datasets;
  int64_t chunk_count = 0;
  int64_t chunk_size = 0;
};

Status write_imatrix(const Imatrix& im, const std::string& path);
// A GGUF imatrix file (ridge's or llama-imatrix's), or the legacy .dat form llama-imatrix
// wrote before (--output-format dat): per weight its name, ncall and the values
// mean(x^2) * ncall, read as in_sum2 with one count of ncall (a 3-D weight's experts in one
// row: split_matrices() cuts it). One-line errors for anything else.
Result<Imatrix> read_imatrix(const std::string& path);
// The quantizers' weights from an importance matrix (offline/quantize.h ColumnImportance): per
// matrix in_sum2 / count, normalised to mean 1, floored at 1e-3 so that a column the text never
// excited still counts a little; a legacy entry of `model`'s 3-D weight (its experts in one row)
// cut to the tensor's matrices.
offline::ImportanceMap column_importance(Imatrix im, const gguf::File& model);
// A legacy entry holding n_mat matrices of n_cols in one row (one count for all): as n_mat
// matrices with that count each. False (unchanged) when the sizes do not divide.
bool split_matrices(ImatrixEntry& e, int64_t n_cols, int64_t n_mat);

struct ImatrixOptions {
  int64_t n_ctx = 512;     // tokens per chunk
  int64_t n_batch = 512;   // tokens per forward step (<= n_ctx)
  int64_t n_chunks = -1;   // -1: every whole chunk of the text
  bool process_output = false;  // also output.weight (llama-imatrix --process-output)
  int32_t bos = -1;        // the first token of every chunk becomes this (-1: left as it is)
  kv::KvType kv_type = kv::KvType::kF16;
};

// Runs the chunks of `tokens` through the model and collects the sums (a mixture of experts' per
// expert, its rows those routed to it). on_chunk(i) after each chunk.
Result<Imatrix> collect_imatrix(const model::Model& m, std::span<const int32_t> tokens,
                                const ImatrixOptions& o, ThreadPool& pool,
                                const std::function<void(int64_t)>& on_chunk = {});

}  // namespace ridge::quality
