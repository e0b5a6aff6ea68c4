// The base model's distributions for KL divergence, in llama-perplexity's file format (its
// --kl-divergence-base files), so files written by either program are read by both:
//   "_logits_", uint32 n_ctx, int32 n_vocab, int32 n_chunk, int32 tokens[n_chunk * n_ctx],
//   then per chunk, per scored position (n_ctx - 1 - n_ctx/2 of them), one row of
//   nv = 2 * ((n_vocab + 1) / 2) + 4 uint16: a float scale and a float min_log_prob (the first
//   four uint16), then each token's log-probability as round((logit - lo) / scale), where lo =
//   max(min logit, max logit - 16) and logits at or below lo store 0; log p = scale * q +
//   min_log_prob. So log-probabilities below max - 16 are clamped (~1e-7 of the mass).
#pragma once

#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace ridge::quality {

// uint16 values per row.
inline int64_t log_prob_row_width(int64_t n_vocab) { return 2 * ((n_vocab + 1) / 2) + 4; }

// Compresses one row of logits into out [log_prob_row_width]; returns the NLL of `token`
// (max + log sum exp - logit[token], as llama.cpp returns it).
double compress_log_probs(std::span<const float> logits, int32_t token, std::span<uint16_t> out);
// log p(token) from a compressed row.
float stored_log_prob(std::span<const uint16_t> row, int32_t token);

struct LogProbHeader {
  uint32_t n_ctx = 0;
  int32_t n_vocab = 0;
  int32_t n_chunk = 0;
  std::vector<int32_t> tokens;  // n_chunk * n_ctx
  int64_t rows_per_chunk() const { return int64_t{n_ctx} - 1 - n_ctx / 2; }
};

class LogProbWriter {
 public:
  static Result<LogProbWriter> create(const std::string& path, const LogProbHeader& h);
  Status write_row(std::span<const uint16_t> row);
  Status close();  // checks every row was written

 private:
  std::ofstream out_;
  std::string path_;
  int64_t rows_left_ = 0;
};

class LogProbReader {
 public:
  // Reads the header; refuses a file that is not one, or whose size does not match it.
  static Result<LogProbReader> open(const std::string& path);
  const LogProbHeader& header() const { return h_; }
  // The next row into `row` [log_prob_row_width(n_vocab)].
  Status read_row(std::span<uint16_t> row);

 private:
  std::ifstream in_;
  std::string path_;
  LogProbHeader h_;
};

}  // namespace ridge::quality
