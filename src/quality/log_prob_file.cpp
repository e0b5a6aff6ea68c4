#include "quality/log_prob_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "quality/perplexity.h"

namespace ridge::quality {
namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

// Round to nearest, ties away as llama.cpp's float trick does for the values stored here (0..65535).
int32_t nearest(float v) { return static_cast<int32_t>(std::lrintf(v)); }

void put_float(uint16_t* at, float v) { std::memcpy(at, &v, sizeof v); }
float get_float(const uint16_t* at) {
  float v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

}  // namespace

double compress_log_probs(std::span<const float> logits, int32_t token, std::span<uint16_t> out) {
  const auto n_vocab = static_cast<int64_t>(logits.size());
  const RowNorm norm = row_norm(logits);
  const float max_logit = norm.max;
  const float min_logit = std::max(*std::min_element(logits.begin(), logits.end()), max_logit - 16);
  const auto log_sum_exp = static_cast<float>(std::log(norm.sum_exp));
  const float min_log_prob = min_logit - max_logit - log_sum_exp;
  const float scale = (max_logit - min_logit) / 65535.f;
  put_float(out.data(), scale);
  put_float(out.data() + 2, min_log_prob);
  uint16_t* q = out.data() + 4;
  std::fill(q, out.data() + out.size(), uint16_t{0});
  if (scale != 0.0f) {
    const float inv = 1 / scale;
    for (int64_t i = 0; i < n_vocab; ++i) {
      if (logits[static_cast<size_t>(i)] > min_logit) q[i] = static_cast<uint16_t>(nearest(inv * (logits[static_cast<size_t>(i)] - min_logit)));
    }
  }
  return static_cast<double>(max_logit) + log_sum_exp - logits[static_cast<size_t>(token)];
}

float stored_log_prob(std::span<const uint16_t> row, int32_t token) {
  return get_float(row.data()) * row[4 + static_cast<size_t>(token)] + get_float(row.data() + 2);
}

Result<LogProbWriter> LogProbWriter::create(const std::string& path, const LogProbHeader& h) {
  if (h.tokens.size() != static_cast<size_t>(h.n_chunk) * h.n_ctx) return error("log-probabilities: header of {} tokens for {} chunks of {}", h.tokens.size(), h.n_chunk, h.n_ctx);
  LogProbWriter w;
  w.path_ = path;
  w.out_.open(path, std::ios::binary | std::ios::trunc);
  if (!w.out_) return error("cannot write '{}'", path);
  w.out_.write(kMagic, sizeof kMagic);
  w.out_.write(reinterpret_cast<const char*>(&h.n_ctx), sizeof h.n_ctx);
  w.out_.write(reinterpret_cast<const char*>(&h.n_vocab), sizeof h.n_vocab);
  w.out_.write(reinterpret_cast<const char*>(&h.n_chunk), sizeof h.n_chunk);
  w.out_.write(reinterpret_cast<const char*>(h.tokens.data()), static_cast<std::streamsize>(h.tokens.size() * sizeof(int32_t)));
  w.rows_left_ = int64_t{h.n_chunk} * h.rows_per_chunk();
  if (!w.out_) return error("cannot write '{}'", path);
  return w;
}

Status LogProbWriter::write_row(std::span<const uint16_t> row) {
  if (rows_left_ <= 0) return error("{}: more rows than the header holds", path_);
  out_.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size_bytes()));
  --rows_left_;
  return out_ ? ok_status() : error("cannot write '{}'", path_);
}

Status LogProbWriter::close() {
  if (rows_left_ != 0) return error("{}: {} rows were not written", path_, rows_left_);
  out_.close();
  return out_ ? ok_status() : error("cannot write '{}'", path_);
}

Result<LogProbReader> LogProbReader::open(const std::string& path) {
  LogProbReader r;
  r.path_ = path;
  r.in_.open(path, std::ios::binary);
  if (!r.in_) return usage_error("cannot open '{}'", path);
  char magic[8] = {};
  r.in_.read(magic, sizeof magic);
  if (!r.in_ || std::memcmp(magic, kMagic, sizeof magic) != 0) {
    return usage_error("'{}' is not a file of log-probabilities (llama-perplexity --kl-divergence-base format)", path);
  }
  LogProbHeader& h = r.h_;
  r.in_.read(reinterpret_cast<char*>(&h.n_ctx), sizeof h.n_ctx);
  r.in_.read(reinterpret_cast<char*>(&h.n_vocab), sizeof h.n_vocab);
  r.in_.read(reinterpret_cast<char*>(&h.n_chunk), sizeof h.n_chunk);
  if (!r.in_ || h.n_ctx < 4 || h.n_ctx > (1u << 20) || h.n_vocab <= 0 || h.n_vocab > (1 << 24) || h.n_chunk <= 0 ||
      h.n_chunk > (1 << 24)) {
    return usage_error("'{}': a broken header (context {}, vocabulary {}, {} chunks)", path, h.n_ctx, h.n_vocab, h.n_chunk);
  }
  const uint64_t n_tokens = uint64_t{h.n_ctx} * static_cast<uint64_t>(h.n_chunk);
  const uint64_t expect = 20 + n_tokens * 4 +
                          static_cast<uint64_t>(h.n_chunk) * static_cast<uint64_t>(h.rows_per_chunk()) *
                              static_cast<uint64_t>(log_prob_row_width(h.n_vocab)) * 2;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size != expect) {
    return usage_error("'{}' holds {} bytes where its header says {}", path, ec ? 0 : size, expect);
  }
  h.tokens.resize(n_tokens);
  r.in_.read(reinterpret_cast<char*>(h.tokens.data()), static_cast<std::streamsize>(n_tokens * sizeof(int32_t)));
  if (!r.in_) return error("cannot read '{}'", path);
  return r;
}

Status LogProbReader::read_row(std::span<uint16_t> row) {
  in_.read(reinterpret_cast<char*>(row.data()), static_cast<std::streamsize>(row.size_bytes()));
  return in_ ? ok_status() : error("cannot read '{}'", path_);
}

}  // namespace ridge::quality
