#include "quality/imatrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "backend/registry.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/workspace.h"
#include "quality/imatrix_backend.h"

namespace ridge::quality {
namespace {

constexpr std::string_view kSum2 = ".in_sum2";
constexpr std::string_view kCounts = ".counts";
constexpr int64_t kBlockSize = 16;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::span<const uint8_t> bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

std::vector<float> floats_of(const gguf::TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements));
  std::memcpy(v.data(), t.data, v.size() * sizeof(float));
  return v;
}

Status check_options(const ImatrixOptions& o) {
  if (o.n_ctx < 16 || o.n_ctx > (1 << 20)) return usage_error("-c {} is outside 16..{}", o.n_ctx, 1 << 20);
  if (o.n_batch < RecordingBackend::kMinRows) {
    return usage_error("-b {} is below {}: smaller steps are not recorded", o.n_batch, RecordingBackend::kMinRows);
  }
  if (o.n_chunks < -1 || o.n_chunks == 0) return usage_error("--chunks must be -1 or positive, got {}", o.n_chunks);
  return ok_status();
}

}  // namespace

Status write_imatrix(const Imatrix& im, const std::string& path) {
  gguf::Writer w;
  w.set("general.type", gguf::make_string("imatrix"));
  w.set("imatrix.datasets", gguf::make_string_array(im.datasets));
  w.set("imatrix.chunk_count", gguf::make_u32(static_cast<uint32_t>(im.chunk_count)));
  w.set("imatrix.chunk_size", gguf::make_u32(static_cast<uint32_t>(im.chunk_size)));
  for (const auto& [name, e] : im.entries) {  // std::map: sorted by name, as llama.cpp writes
    const auto n_mat = static_cast<uint64_t>(e.counts.size());
    if (n_mat == 0 || e.n_cols <= 0 || e.in_sum2.size() != n_mat * static_cast<uint64_t>(e.n_cols)) {
      return error("imatrix: entry {} has {} sums for {} columns x {} matrices", name, e.in_sum2.size(), e.n_cols, n_mat);
    }
    std::vector<float> counts(e.counts.begin(), e.counts.end());
    std::vector<uint64_t> sum_shape = {static_cast<uint64_t>(e.n_cols)}, count_shape = {1};
    if (n_mat > 1) {  // ggml writes a trailing 1 away
      sum_shape.push_back(n_mat);
      count_shape.push_back(n_mat);
    }
    RIDGE_RETURN_IF_ERROR(w.add_tensor_data(name + std::string(kSum2), GgmlType::kF32, sum_shape, bytes_of(e.in_sum2)));
    RIDGE_RETURN_IF_ERROR(w.add_tensor_data(name + std::string(kCounts), GgmlType::kF32, count_shape, bytes_of(counts)));
  }
  return w.write(path);
}

namespace {

// The legacy form: int32 n_entries; per entry int32 name length, the name, int32 ncall, int32
// nval, nval floats; then optionally int32 chunk count, int32 length and the dataset's name.
Result<Imatrix> read_legacy(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return usage_error("{}: cannot open", path);
  const auto file_size = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  const auto bad = [&](std::string_view what) { return usage_error("{}: not an importance matrix ({})", path, what); };
  const auto read_i32 = [&](int32_t& v) { return static_cast<bool>(in.read(reinterpret_cast<char*>(&v), sizeof(v))); };
  int32_t n_entries = 0;
  if (!read_i32(n_entries) || n_entries < 1 || n_entries > (1 << 20)) return bad("no GGUF header, no legacy entry count");
  Imatrix im;
  for (int32_t i = 0; i < n_entries; ++i) {
    int32_t len = 0, ncall = 0, nval = 0;
    if (!read_i32(len) || len < 1 || len > 4096) return bad(fmt::format("entry {}: bad name length", i));
    std::string name(static_cast<size_t>(len), '\0');
    if (!in.read(name.data(), len) || !read_i32(ncall) || !read_i32(nval) || ncall < 0 || nval < 1 || nval > (1 << 28)) {
      return bad(fmt::format("entry {}: truncated or bad sizes", i));
    }
    if (int64_t{nval} * 4 > file_size - static_cast<int64_t>(in.tellg())) {
      return bad(fmt::format("entry {} ({}): {} values past the end of the file", i, name, nval));
    }
    ImatrixEntry e;
    e.n_cols = nval;
    e.in_sum2.resize(static_cast<size_t>(nval));
    if (!in.read(reinterpret_cast<char*>(e.in_sum2.data()), static_cast<std::streamsize>(nval) * 4)) {
      return bad(fmt::format("entry {} ({}): truncated values", i, name));
    }
    e.counts = {ncall};
    if (!im.entries.emplace(std::move(name), std::move(e)).second) return bad(fmt::format("entry {} repeats a name", i));
  }
  int32_t chunks = 0, len = 0;
  if (read_i32(chunks) && read_i32(len) && len > 0 && len <= 4096) {
    std::string dataset(static_cast<size_t>(len), '\0');
    if (in.read(dataset.data(), len)) im.datasets.push_back(std::move(dataset));
    im.chunk_count = chunks;
  }
  return im;
}

bool is_gguf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace

bool split_matrices(ImatrixEntry& e, int64_t n_cols, int64_t n_mat) {
  if (e.counts.size() != 1 || n_mat < 1 || e.n_cols != n_cols * n_mat) return false;
  e.n_cols = n_cols;
  e.counts.assign(static_cast<size_t>(n_mat), e.counts[0]);
  return true;
}

Result<Imatrix> read_imatrix(const std::string& path) {
  if (!is_gguf(path)) return read_legacy(path);
  RIDGE_ASSIGN_OR_RETURN(gguf::File f, gguf::File::open(path));
  RIDGE_ASSIGN_OR_RETURN(std::string type, f.get_string_or("general.type", ""));
  if (type != "imatrix") {
    return usage_error("{}: not an importance matrix (general.type is '{}')", path, type);
  }
  Imatrix im;
  RIDGE_ASSIGN_OR_RETURN(im.chunk_count, f.get_int_or("imatrix.chunk_count", 0));
  RIDGE_ASSIGN_OR_RETURN(im.chunk_size, f.get_int_or("imatrix.chunk_size", 0));
  if (f.has("imatrix.datasets")) {
    RIDGE_ASSIGN_OR_RETURN(im.datasets, f.get_string_array("imatrix.datasets"));
  }
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (!ends_with(t.name, kSum2)) continue;
    const std::string name = t.name.substr(0, t.name.size() - kSum2.size());
    const gguf::TensorInfo* c = f.find_tensor(name + std::string(kCounts));
    if (c == nullptr) return error("{}: {} has no {}{}", path, t.name, name, kCounts);
    if (t.type != GgmlType::kF32 || c->type != GgmlType::kF32) return error("{}: {}'s tensors are not f32", path, name);
    const uint64_t n_mat = c->n_elements;
    if (n_mat == 0 || t.n_elements % n_mat != 0 || t.cols() * n_mat != t.n_elements) {
      return error("{}: {} has {} sums for {} matrices", path, name, t.n_elements, n_mat);
    }
    ImatrixEntry e;
    e.n_cols = static_cast<int64_t>(t.cols());
    e.in_sum2 = floats_of(t);
    for (float v : floats_of(*c)) {
      if (!(v >= 0) || v != std::floor(v)) return error("{}: {} has a count of {}", path, name, v);
      e.counts.push_back(static_cast<int64_t>(v));
    }
    im.entries.emplace(name, std::move(e));
  }
  if (im.entries.empty()) return usage_error("{}: an importance matrix with no entries", path);
  return im;
}

Result<Imatrix> collect_imatrix(const model::Model& m, std::span<const int32_t> tokens,
                                const ImatrixOptions& o, ThreadPool& pool,
                                const std::function<void(int64_t)>& on_chunk) {
  RIDGE_RETURN_IF_ERROR(check_options(o).with_prefix("imatrix"));
  const model::ModelConfig& cfg = m.config();
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  if (n_tokens < 2 * o.n_ctx) {
    return usage_error("imatrix: the text has {} tokens; a context of {} needs at least {}", n_tokens, o.n_ctx, 2 * o.n_ctx);
  }
  for (int32_t t : tokens) {
    if (t < 0 || t >= cfg.n_vocab) return error("imatrix: token {} is outside the vocabulary of {}", t, cfg.n_vocab);
  }
  const int64_t n_batch = std::min(o.n_batch, o.n_ctx);
  const int64_t n_blocks = (o.n_ctx + kBlockSize - 1) / kBlockSize;
  RIDGE_ASSIGN_OR_RETURN(kv::KvCache kv, kv::KvCache::create(m.kv_config(n_blocks, o.kv_type, kBlockSize)));
  model::WorkspaceLimits lim;
  lim.max_tokens = n_batch;
  lim.max_outputs = n_batch;  // every row: the last layer's FFN sees them all, as in llama.cpp
  lim.max_context = o.n_ctx;
  lim.n_threads = static_cast<int>(pool.size());
  lim.block_size = kBlockSize;
  lim.hidden_outputs = !o.process_output;  // no output head unless it is recorded
  RIDGE_ASSIGN_OR_RETURN(model::Workspace ws, model::Workspace::create(cfg, lim));
  RIDGE_ASSIGN_OR_RETURN(std::unique_ptr<model::Backend> cpu, backend::create_backend("cpu", {&m.kernels(), &pool}));
  Imatrix im;
  im.chunk_size = o.n_ctx;
  const WeightNames names(m, o.process_output);
  RecordingBackend rec(*cpu, names, im);
  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  for (int64_t b = 0; b < n_blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  const int64_t n_chunks = o.n_chunks > 0 ? std::min(n_tokens / o.n_ctx, o.n_chunks) : n_tokens / o.n_ctx;
  model::Batch batch;
  for (int64_t c = 0; c < n_chunks; ++c) {
    for (int64_t start = 0; start < o.n_ctx; start += n_batch) {
      const int64_t n = std::min(n_batch, o.n_ctx - start);
      batch.clear();
      batch.output_hidden = !o.process_output;
      // A hybrid model's one recurrent-state slot restarts at each chunk's position 0.
      const int32_t s = batch.add_seq(table, static_cast<int32_t>(start + n), cfg.n_recurrent_layers() > 0 ? 0 : -1);
      for (int64_t i = start; i < start + n; ++i) {
        int32_t t = tokens[static_cast<size_t>(c * o.n_ctx + i)];
        if (i == 0 && o.bos >= 0) t = o.bos;
        batch.add_token(t, static_cast<int32_t>(i), s, /*logits=*/true, kBlockSize);
      }
      RIDGE_RETURN_IF_ERROR(m.forward(batch, kv, ws, rec).status().with_prefix("imatrix"));
    }
    im.chunk_count = c + 1;
    if (on_chunk) on_chunk(c);
  }
  for (const auto& [name, e] : im.entries) {
    for (float v : e.in_sum2) {
      if (!std::isfinite(v)) return error("imatrix: non-finite sums in {}", name);
    }
  }
  return im;
}

offline::ImportanceMap column_importance(Imatrix im, const gguf::File& model) {
  for (auto& [name, e] : im.entries) {
    const gguf::TensorInfo* t = model.find_tensor(name);
    if (t != nullptr && t->shape.size() > 2) {
      (void)split_matrices(e, static_cast<int64_t>(t->cols()), static_cast<int64_t>(t->shape[2]));
    }
  }
  offline::ImportanceMap out;
  for (const auto& [name, e] : im.entries) {
    offline::ColumnImportance& c = out[name];
    c.n_cols = e.n_cols;
    for (size_t m = 0; m < e.counts.size(); ++m) {
      std::vector<float>& w = c.matrices.emplace_back();
      if (e.counts[m] == 0) continue;
      const float* sum = e.in_sum2.data() + m * static_cast<size_t>(e.n_cols);
      double mean = 0;
      for (int64_t j = 0; j < e.n_cols; ++j) mean += sum[j];
      mean /= static_cast<double>(e.n_cols);
      if (!(mean > 0)) continue;
      w.resize(static_cast<size_t>(e.n_cols));
      for (int64_t j = 0; j < e.n_cols; ++j) w[static_cast<size_t>(j)] = std::max(static_cast<float>(sum[j] / mean), 1e-3f);
    }
  }
  return out;
}


}  // namespace ridge::quality
