// What the op tests share: the (backend, ISA) parameters, a fixture that creates the backend by
// name, the staging of the ops' activations in the backend's memory and of their weights in its
// load_weights, batches, random inputs and error measures. The references live in the tests
// themselves (plain double-precision loops) and call no backend's code.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "base/check.h"
#include "base/device_memory.h"
#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "model/backend.h"
#include "model/batch.h"
#include "offline/quantize.h"
#include "tensor/fp16.h"
#include "tensor/ggml_type.h"
#include "guarded_memory.h"

namespace ridge::backend::testing {

struct OpParam {
  std::string backend;
  kernels::Isa isa = kernels::Isa::kRef;
};

// Failure messages name the parameter ("cpu on avx512").
inline void PrintTo(const OpParam& p, std::ostream* os) {
  *os << p.backend << " on " << kernels::isa_name(p.isa);
}

// Every registered backend; the CPU backend on each ISA's kernel table (an ISA this CPU lacks is
// skipped at run time), the others on the ref table only (the weights' row layout).
inline std::vector<OpParam> op_params() {
  std::vector<OpParam> params;
  for (const std::string& name : backend_names()) {
    if (name == "cpu") {
      for (kernels::Isa isa : {kernels::Isa::kRef, kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
        params.push_back({name, isa});
      }
    } else {
      params.push_back({name, kernels::Isa::kRef});
    }
  }
  return params;
}

inline std::string op_param_name(const ::testing::TestParamInfo<OpParam>& info) {
  std::string s = info.param.backend + "_" + std::string(kernels::isa_name(info.param.isa));
  std::replace_if(
      s.begin(), s.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return s;
}

// The backend of the test's parameter, on a pool of 2 threads. The test backend's memory is
// strict while the test runs: an activation an op takes that is not the backend's memory, or a
// weight that load_weights was not given, aborts the test (guarded_memory.h).
class BackendOpTest : public ::testing::TestWithParam<OpParam> {
 protected:
  void SetUp() override {
    const OpParam& p = GetParam();
    if (!kernels::isa_supported(p.isa)) GTEST_SKIP() << "CPU lacks " << kernels::isa_name(p.isa);
    // A device backend without its device (no GPU here) skips, unless RIDGE_REQUIRE_CUDA says
    // this run is the device check.
    if (auto mem = device_memory(p.backend); !mem.ok()) {
      if (std::getenv("RIDGE_REQUIRE_CUDA") != nullptr) FAIL() << mem.status().message();
      GTEST_SKIP() << p.backend << ": " << mem.status().message();
    }
    pool_ = std::make_unique<ThreadPool>(2);
    kernels_ = &kernels::kernels_for(p.isa);
    auto b = create_backend(p.backend, BackendParams{kernels_, pool_.get()});
    ASSERT_TRUE(b.ok()) << b.status().message();
    backend_ = std::move(b).value();
  }
  model::Backend& be() { return *backend_; }

  GuardedMemory::StrictScope strict_;
  std::unique_ptr<ThreadPool> pool_;
  const kernels::Kernels* kernels_ = nullptr;
  std::unique_ptr<model::Backend> backend_;
};

// The activations of an op test in the backend's memory (be().memory()), where a device backend's
// ops need them: dev(v) is a buffer of that memory holding a copy of host vector v (the same
// buffer for the same vector again; null for an empty one); sync() and the destructor copy the
// buffers of the vectors mapped non-const back into them. Where the memory is host-visible (the
// CPU backend) the vectors' own pointers. Declared after the vectors it maps.
class DeviceMirror {
 public:
  explicit DeviceMirror(model::Backend& be) : mem_(&be.memory()) {}
  ~DeviceMirror() { sync(); }
  DeviceMirror(const DeviceMirror&) = delete;
  DeviceMirror& operator=(const DeviceMirror&) = delete;

  // An input of the ops.
  template <class T>
  const T* operator()(const std::vector<T>& v) {
    return static_cast<const T*>(map(v.data(), v.size() * sizeof(T), false));
  }
  // Written by the ops (or read and written): its buffer is copied back by sync.
  template <class T>
  T* operator()(std::vector<T>& v) {
    return static_cast<T*>(map(v.data(), v.size() * sizeof(T), true));
  }
  // The ops' results into the vectors mapped non-const (before the test reads them).
  void sync() {
    for (Entry& e : entries_) {
      if (e.writable) mem_->to_host(const_cast<void*>(e.host), e.buf.get(), e.buf.bytes());
    }
  }

 private:
  struct Entry {
    const void* host = nullptr;
    DeviceBuffer buf;
    bool writable = false;  // mapped non-const at least once
  };
  void* map(const void* host, size_t bytes, bool writable) {
    if (bytes == 0) return nullptr;
    if (mem_->host_visible()) return const_cast<void*>(host);
    for (Entry& e : entries_) {
      if (e.host != host) continue;
      RIDGE_CHECK(e.buf.bytes() == bytes);
      e.writable = e.writable || writable;
      return e.buf.get();
    }
    Result<DeviceBuffer> buf = mem_->allocate(bytes, MemoryUse::kScratch);
    RIDGE_CHECK(buf.ok());
    mem_->to_device(buf->get(), host, bytes);
    entries_.push_back(Entry{host, std::move(buf).value(), writable});
    return entries_.back().buf.get();
  }

  DeviceMemory* mem_;
  std::vector<Entry> entries_;
};

// begin_step .. end_step around the ops of a test (every op runs inside a step).
class StepScope {
 public:
  StepScope(model::Backend& b, const model::Batch& batch) : b_(&b) { b.begin_step(batch); }
  ~StepScope() { b_->end_step(); }
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;

 private:
  model::Backend* b_;
};

// n tokens of one sequence at positions 0..n-1 in blocks 0, 1, ... of 16; need_logits from
// `logits` (all rows when empty).
inline model::Batch one_seq_batch(int64_t n, const std::vector<uint8_t>& logits = {}) {
  model::Batch b;
  std::vector<int32_t> table;
  for (int64_t i = 0; i < (n + 15) / 16; ++i) table.push_back(static_cast<int32_t>(i));
  b.add_seq(table, static_cast<int32_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    const bool need = logits.empty() || logits[static_cast<size_t>(t)] != 0;
    b.add_token(static_cast<int32_t>(t % 7), static_cast<int32_t>(t), 0, need, 16);
  }
  return b;
}

// n values of a normal distribution (mean, sd), deterministic per seed.
inline std::vector<float> randn(size_t n, uint32_t seed, float sd = 1.0f, float mean = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(mean, sd);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// The largest |got - want| over n values.
inline double max_abs_diff(const float* got, const double* want, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(got[i] - want[i]));
  return m;
}

// A measured error, for the report: a test property, and a line on stdout when
// RIDGE_OP_ERRORS is set.
inline void note_error(const std::string& what, double value) {
  ::testing::Test::RecordProperty(what, std::to_string(value));
  if (std::getenv("RIDGE_OP_ERRORS") != nullptr)
    std::printf("[ error    ] %s %.3g\n", what.c_str(), value);
}

// y = x / sqrt(mean(x^2) + eps) * w in double.
inline void ref_rms_norm(const double* x, const float* w, double* y, int64_t n, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s * w[i];
}

// A weight matrix in GGUF's row layout and the values it holds (q8_0: its dequantized values,
// decoded here from the block format: an fp16 scale, then 32 int8).
struct TestMatrix {
  std::vector<float> storage;  // the bytes, float-aligned
  std::vector<double> w;       // [rows, cols]
  kernels::WeightView view;
};

inline TestMatrix make_matrix(GgmlType type, int64_t rows, int64_t cols, uint32_t seed, float sd) {
  const std::vector<float> src = randn(static_cast<size_t>(rows * cols), seed, sd);
  const uint64_t row_bytes = *ggml_row_bytes(type, static_cast<uint64_t>(cols));
  TestMatrix m;
  m.storage.resize((rows * row_bytes + 3) / 4);
  auto* bytes = reinterpret_cast<uint8_t*>(m.storage.data());
  m.w.resize(src.size());
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = bytes + r * row_bytes;
    offline::encode_row(type, src.data() + r * cols, row, cols);
    for (int64_t c = 0; c < cols; ++c) {
      double v = src[static_cast<size_t>(r * cols + c)];
      if (type == GgmlType::kQ8_0) {
        const uint8_t* blk = row + c / 32 * 34;
        const auto q = static_cast<int8_t>(blk[2 + c % 32]);
        v = static_cast<double>(fp16_to_f32(static_cast<uint16_t>(blk[0] | blk[1] << 8))) * q;
      }
      m.w[static_cast<size_t>(r * cols + c)] = v;
    }
  }
  m.view = kernels::WeightView{type, bytes, rows, cols, row_bytes, kernels::WeightLayout::kRows};
  return m;
}

// A weight an op test hands the ops, as the region a runner gives load_weights (a matrix's rows;
// a vector's values).
inline model::WeightRegion weight_region(std::string name, const TestMatrix& m) {
  return {std::move(name), m.view.data, static_cast<uint64_t>(m.view.rows) * m.view.row_bytes,
          false};
}
inline model::WeightRegion weight_region(std::string name, const std::vector<float>& v,
                                         bool derived = false) {
  return {std::move(name), v.data(), v.size() * sizeof(float), derived};
}

// Gives the backend every weight the test's next ops read, in one call (load_weights replaces
// the previous set). The ops keep taking the host pointers, as the model passes them; a device
// backend reads its copies.
inline ::testing::AssertionResult load_test_weights(model::Backend& be,
                                                    std::vector<model::WeightRegion> regions) {
  model::Weights w;
  w.regions = std::move(regions);
  const Status s = be.load_weights(w);
  if (!s.ok()) return ::testing::AssertionFailure() << "load_weights: " << s.message();
  return ::testing::AssertionSuccess();
}

}  // namespace ridge::backend::testing
