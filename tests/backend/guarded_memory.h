// Device memory for the test backend that host code cannot touch between the backend's ops:
// each allocation is a mapping of its own, inaccessible (PROT_NONE) except while an op runs
// (GuardedMemory::Open, taken by every op of the scalar backend) or a copy through the
// DeviceMemory interface is made. A model, runner or engine that reads or writes the backend's
// memory directly, as only a host backend may, faults there: the test process dies. It is what a
// GPU's memory is to host code, on a machine without one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string_view>

#include "base/device_memory.h"

namespace ridge::backend::testing {

class GuardedMemory final : public DeviceMemory {
 public:
  static GuardedMemory& instance();

  std::string_view name() const override { return "guarded"; }
  bool host_visible() const override { return false; }
  Result<DeviceBuffer> allocate(size_t bytes, MemoryUse use) override;
  void to_device(void* dst, const void* src, size_t bytes) override;
  void to_host(void* dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* dst, size_t bytes) override;
  uint64_t available_bytes() const override { return uint64_t{1} << 30; }

  // Every allocation readable and writable while one lives (they nest).
  class Open {
   public:
    explicit Open(GuardedMemory& m);
    ~Open();
    Open(const Open&) = delete;
    Open& operator=(const Open&) = delete;

   private:
    GuardedMemory* m_;
  };

  // Whether p points into one of the allocations.
  bool holds(const void* p) const;
  // Strict: the scalar backend's ops CHECK that every activation pointer they take (and the KV
  // cache's storage) is this memory's, so a host pointer handed to the device fails too, and that
  // every weight they take (which stay the model's host pointers) lies in a region given to
  // load_weights. On in the op tests (op_fixture.h) and the forward and engine tests.
  void set_strict(bool strict) { strict_ = strict; }
  bool strict() const { return strict_; }
  // CHECKs p (null, or held) when strict.
  void expect_held(const void* p) const;

  // Strict while one lives.
  class StrictScope {
   public:
    StrictScope() { instance().set_strict(true); }
    ~StrictScope() { instance().set_strict(false); }
    StrictScope(const StrictScope&) = delete;
    StrictScope& operator=(const StrictScope&) = delete;
  };

  // Whether the allocations are open now (tests of the guard itself).
  bool is_open() const { return depth_ > 0; }
  size_t n_allocations() const { return maps_.size(); }

 protected:
  void release(void* p, size_t bytes, MemoryUse use) override;

 private:
  GuardedMemory() = default;
  void protect(void* p, size_t bytes, bool open) const;
  void protect_all(bool open) const;

  std::map<void*, size_t> maps_;  // mapping -> its bytes (whole pages)
  int depth_ = 0;
  bool strict_ = false;
};

}  // namespace ridge::backend::testing
