// A warp on the host, for the CUDA kernels' warp code (attention_warp.h): 32 threads in lockstep
// at each collective, which combine their values in the order the GPU's shuffles do (a
// butterfly of xor partners for sums and maxima), so the host run gives the kernel's bits.
#pragma once

#include <algorithm>
#include <barrier>
#include <functional>
#include <thread>
#include <vector>

namespace ridge::backend::cuda::testing {

class HostWarp {
 public:
  struct Shared {
    std::barrier<> bar{32};
    float slots[32] = {};
  };
  HostWarp(Shared& s, int lane) : s_(&s), lane_(lane) {}

  int lane() const { return lane_; }
  void sync() const { s_->bar.arrive_and_wait(); }
  float sum(float v) const {
    for (int off = 16; off > 0; off /= 2) v += exchange(v, lane_ ^ off);
    return v;
  }
  float max(float v) const {
    for (int off = 16; off > 0; off /= 2) v = std::max(v, exchange(v, lane_ ^ off));
    return v;
  }
  float broadcast(float v, int src) const { return exchange(v, src); }

  // Runs body(warp) on 32 threads, one per lane, and waits for them.
  static void run(const std::function<void(HostWarp&)>& body) {
    Shared shared;
    std::vector<std::thread> lanes;
    for (int lane = 0; lane < 32; ++lane) {
      lanes.emplace_back([&shared, &body, lane] {
        HostWarp w(shared, lane);
        body(w);
      });
    }
    for (std::thread& t : lanes) t.join();
  }

 private:
  // Every lane publishes v, then reads lane `from`'s.
  float exchange(float v, int from) const {
    s_->slots[lane_] = v;
    sync();
    const float got = s_->slots[from];
    sync();
    return got;
  }
  Shared* s_;
  int lane_;
};

}  // namespace ridge::backend::cuda::testing
