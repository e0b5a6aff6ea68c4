// A thread block on the host, for the CUDA kernels' block code (row_ops.h): n threads (a multiple
// of 32) in lockstep at each collective. The block's sum follows block_sum's order (each warp's
// butterfly, then every warp's butterfly over the warps' totals); a warp's sum and maximum follow
// its shuffles' order (xor partners) and involve that warp's threads only.
#pragma once

#include <barrier>
#include <cmath>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace ridge::backend::cuda::testing {

class HostBlock {
 public:
  struct Shared {
    explicit Shared(int n) : block(n), slots(static_cast<size_t>(n)) {
      for (int w = 0; w < n / 32; ++w) warps.push_back(std::make_unique<std::barrier<>>(32));
    }
    std::barrier<> block;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    std::vector<float> slots;  // one per thread
    float scratch[32] = {};    // block_sum's shared memory
  };
  HostBlock(Shared& s, int thread, int size) : s_(&s), thread_(thread), size_(size) {}

  int thread() const { return thread_; }
  int size() const { return size_; }
  void sync() const { s_->block.arrive_and_wait(); }
  float warp_sum(float v) const {
    for (int off = 16; off > 0; off /= 2) v += exchange(v, off);
    return v;
  }
  float warp_max(float v) const {
    for (int off = 16; off > 0; off /= 2) v = fmaxf(v, exchange(v, off));
    return v;
  }
  float sum(float v) const {
    const int lane = thread_ % 32, warp = thread_ / 32, n_warps = size_ / 32;
    v = warp_sum(v);
    sync();
    if (lane == 0) s_->scratch[warp] = v;
    sync();
    float total = lane < n_warps ? s_->scratch[lane] : 0.0f;
    total = warp_sum(total);
    sync();
    return total;
  }

  // Runs body(block) on n threads and waits for them.
  static void run(int n, const std::function<void(HostBlock&)>& body) {
    Shared shared(n);
    std::vector<std::thread> threads;
    for (int t = 0; t < n; ++t) {
      threads.emplace_back([&shared, &body, t, n] {
        HostBlock b(shared, t, n);
        body(b);
      });
    }
    for (std::thread& t : threads) t.join();
  }

 private:
  // Within the thread's warp: publish v, read the value of lane ^ off.
  float exchange(float v, int off) const {
    std::barrier<>& bar = *s_->warps[static_cast<size_t>(thread_ / 32)];
    s_->slots[static_cast<size_t>(thread_)] = v;
    bar.arrive_and_wait();
    const float got = s_->slots[static_cast<size_t>((thread_ / 32) * 32 + ((thread_ % 32) ^ off))];
    bar.arrive_and_wait();
    return got;
  }
  Shared* s_;
  int thread_, size_;
};

}  // namespace ridge::backend::cuda::testing
