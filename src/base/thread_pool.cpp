#include "base/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/check.h"

namespace ridge {
namespace {

// How a waiting thread waits: it polls on PAUSE for kSpinTime, then keeps polling between
// sched_yield() calls (which hand the core to any other runnable thread, so an oversubscribed
// machine is not starved) until kPollTime, and only then sleeps in the kernel (futex through
// std::atomic::wait). A decode step runs ~4 regions per layer microseconds apart, but the two
// threads of a region may finish up to ~1 ms apart on a shared machine; a sleeping thread then
// pays a kernel wake-up, which on a VM (an IPI to a halted vCPU) can take over 1 ms
// (docs/tuning.md, "Thread pool spin").
constexpr auto kSpinTime = std::chrono::microseconds(50);
constexpr auto kPollTime = std::chrono::milliseconds(2);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Waits until `value` differs from `old`: spin, then poll while yielding, then sleep.
template <typename T>
T wait_change(const std::atomic<T>& value, T old) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  for (int i = 1;; ++i) {
    T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
    if (i % 64 == 0) {  // the clock costs ~20-50 ns: read it once per 64 polls
      const auto waited = Clock::now() - start;
      if (waited >= kPollTime) break;
      if (waited >= kSpinTime) {
        sched_yield();
        continue;
      }
    }
    cpu_relax();
  }
  for (;;) {
    value.wait(old, std::memory_order_acquire);
    T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
  }
}

void pin_to_cpu(int cpu) {
  const int n_cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (n_cpus <= 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % n_cpus, &set);
  // Best effort: a failure (restricted cpuset) leaves the thread unpinned, which is only slower.
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

}  // namespace

struct ThreadPool::Impl {
  int n_threads = 1;
  std::vector<std::thread> workers;
  const FunctionRef<void(int, int)>* fn = nullptr;
  // Bumped by run() to start a region; workers remember the last one they served.
  alignas(64) std::atomic<uint32_t> generation{0};
  // Workers still running the current region; the caller waits for 0.
  alignas(64) std::atomic<int> pending{0};
  std::atomic<bool> stop{false};

  void worker_loop(int ith, bool pin) {
    if (pin) pin_to_cpu(ith);
    uint32_t seen = 0;
    for (;;) {
      seen = wait_change(generation, seen);
      if (stop.load(std::memory_order_acquire)) return;
      (*fn)(ith, n_threads);
      if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) pending.notify_one();
    }
  }
};

ThreadPool::ThreadPool(int n_threads, bool pin) : impl_(std::make_unique<Impl>()) {
  RIDGE_CHECK(n_threads >= 1);
  impl_->n_threads = n_threads;
  impl_->workers.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) {
    impl_->workers.emplace_back([this, i, pin] { impl_->worker_loop(i, pin); });
  }
}

ThreadPool::~ThreadPool() {
  impl_->stop.store(true, std::memory_order_release);
  impl_->generation.fetch_add(1, std::memory_order_acq_rel);
  impl_->generation.notify_all();
  for (auto& t : impl_->workers) t.join();
}

int ThreadPool::size() const { return impl_->n_threads; }

void ThreadPool::run(FunctionRef<void(int ith, int nth)> fn) {
  Impl& p = *impl_;
  if (p.n_threads == 1) {
    fn(0, 1);
    return;
  }
  p.fn = &fn;
  p.pending.store(p.n_threads - 1, std::memory_order_relaxed);
  p.generation.fetch_add(1, std::memory_order_acq_rel);  // publishes fn and pending
  p.generation.notify_all();
  fn(0, p.n_threads);
  int left = p.pending.load(std::memory_order_acquire);
  while (left != 0) left = wait_change(p.pending, left);
}

void run_on_threads(int n, const std::function<void(int i)>& fn) {
  RIDGE_CHECK(n >= 1);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n - 1));
  for (int i = 1; i < n; ++i) threads.emplace_back(fn, i);
  fn(0);
  for (std::thread& t : threads) t.join();
}

Range split_range(int64_t n, int ith, int nth, int64_t grain) {
  RIDGE_CHECK(nth >= 1 && ith >= 0 && ith < nth && grain >= 1 && n >= 0);
  const int64_t n_grains = (n + grain - 1) / grain;
  const int64_t g0 = n_grains * ith / nth;
  const int64_t g1 = n_grains * (ith + 1) / nth;
  const int64_t begin = g0 * grain < n ? g0 * grain : n;
  const int64_t end = g1 * grain < n ? g1 * grain : n;
  return {begin, end};
}

}  // namespace ridge
