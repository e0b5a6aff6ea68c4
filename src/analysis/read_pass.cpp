// A probe read pass on the caller's pool (see read_pass.h).
#include "analysis/read_pass.h"

#include <algorithm>
#include <vector>

#include "analysis/probe.h"
#include "base/timer.h"

namespace ridge::analysis {
namespace {

namespace pk = probe_kernels;

// Each thread's slice: a whole number of steps of every stream.
size_t slice_floats(uint64_t bytes, int n_threads) {
  const size_t unit = pk::kMemStep * pk::kMaxStreams;
  return bytes / sizeof(float) / static_cast<size_t>(n_threads) / unit * unit;
}

}  // namespace

Result<ReadPass> ReadPass::create(ThreadPool& pool, uint64_t bytes, int calibration_passes,
                                  const std::string& isa) {
  if (calibration_passes < 1) return usage_error("read pass: calibration passes must be >= 1");
  if (slice_floats(bytes, pool.size()) == 0) {
    return usage_error("read pass: {} bytes is too small for {} threads", bytes, pool.size());
  }
  ReadPass r;
  RIDGE_ASSIGN_OR_RETURN(r.loops_, select_probe_loops(isa));
  r.bytes_ = slice_floats(bytes, pool.size()) * sizeof(float) * static_cast<uint64_t>(pool.size());
  r.buf_ = alloc_huge(r.bytes_);
  if (!r.buf_) return error("read pass: cannot allocate {} bytes", r.bytes_);
  auto* data = static_cast<float*>(r.buf_.get());
  const size_t per = slice_floats(r.bytes_, pool.size());
  pool.run([&](int ith, int) {  // first touch by the thread that reads the slice
    std::fill_n(data + per * static_cast<size_t>(ith), per, 1.0f);
  });
  const auto variants = probe_read_variants();
  std::vector<std::vector<double>> rates(variants.size());
  for (int pass = 0; pass < calibration_passes; ++pass) {
    for (size_t k = 0; k < variants.size(); ++k) rates[k].push_back(r.run_variant(pool, variants[k]));
  }
  size_t best = 0;
  double best_rate = -1;
  for (size_t k = 0; k < variants.size(); ++k) {
    const double m = probe_median(rates[k]);
    if (m > best_rate) {
      best_rate = m;
      best = k;
    }
  }
  r.loop_ = variants[best];
  r.loop_name_ = probe_loop_name(r.loop_, false);
  return r;
}

double ReadPass::run(ThreadPool& pool) { return run_variant(pool, loop_); }

double ReadPass::run_variant(ThreadPool& pool, const pk::MemLoop& loop) {
  const int n = pool.size();
  const size_t per = slice_floats(bytes_, n);
  const auto* data = static_cast<const float*>(buf_.get());
  std::vector<double> t0(static_cast<size_t>(n)), t1(static_cast<size_t>(n));
  std::vector<float> sums(static_cast<size_t>(n));
  pool.run([&](int ith, int) {
    const auto i = static_cast<size_t>(ith);
    t0[i] = now_seconds();
    sums[i] = loops_.read(data + per * i, per, loop);
    t1[i] = now_seconds();
  });
  last_sum_ = 0;
  for (float s : sums) last_sum_ += s;
  const double t = *std::max_element(t1.begin(), t1.end()) - *std::min_element(t0.begin(), t0.end());
  return t > 0 ? static_cast<double>(bytes_) / t : 0;
}

}  // namespace ridge::analysis
