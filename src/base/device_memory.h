// Memory of the device a backend runs on. Everything a forward step reads or writes (the
// workspace's activations, the KV cache, the recurrent state) is allocated here, so a device
// backend (CUDA) keeps it in its own memory and the CPU backend in the host's. Host code outside
// a backend's ops touches such memory only through these calls (to_host, to_device, copy, zero)
// unless the memory is host_visible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "base/status.h"

namespace ridge {

// How an allocation is used: kStream arrays are large and read by every step (KV cache,
// recurrent state: huge pages on the host); kScratch are a step's activations.
enum class MemoryUse { kScratch, kStream };

class DeviceMemory;

// One allocation of a DeviceMemory, released when destroyed. Zero-filled when made.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceMemory* mem, void* p, size_t bytes, MemoryUse use)
      : mem_(mem), p_(p), bytes_(bytes), use_(use) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }
  DeviceMemory* memory() const { return mem_; }
  explicit operator bool() const { return p_ != nullptr; }
  void reset();

 private:
  DeviceMemory* mem_ = nullptr;
  void* p_ = nullptr;
  size_t bytes_ = 0;
  MemoryUse use_ = MemoryUse::kScratch;
};

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual std::string_view name() const = 0;
  // Whether host code may dereference this memory's pointers (the host's own memory).
  virtual bool host_visible() const = 0;
  // `bytes` (> 0) zero-filled, aligned to 64 bytes; an error naming the size when the device
  // cannot hold it.
  virtual Result<DeviceBuffer> allocate(size_t bytes, MemoryUse use) = 0;
  // Host to device, device to host, within the device, and zeroing (every pointer of the device
  // but src of to_device and dst of to_host).
  virtual void to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual void to_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void zero(void* dst, size_t bytes) = 0;
  // Bytes the device could still hand out (the engine's KV budget takes a fraction of them).
  virtual uint64_t available_bytes() const = 0;

 protected:
  friend class DeviceBuffer;
  virtual void release(void* p, size_t bytes, MemoryUse use) = 0;
};

// The host's memory: kScratch from the heap, kStream in transparent huge pages
// (base/huge_pages.h); available_bytes is MemAvailable.
DeviceMemory& host_memory();

// n values of T in a DeviceMemory: data() is the device's pointer; size(), empty() and (for
// host-visible memory, e.g. inside the CPU backend) element access as a vector's.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  static Result<DeviceArray> create(DeviceMemory& mem, size_t n,
                                    MemoryUse use = MemoryUse::kScratch) {
    DeviceArray a;
    if (n == 0) return a;
    if (n > SIZE_MAX / sizeof(T)) return error("device memory: {} values overflow", n);
    RIDGE_ASSIGN_OR_RETURN(a.buf_, mem.allocate(n * sizeof(T), use));
    a.n_ = n;
    return a;
  }
  T* data() { return static_cast<T*>(buf_.get()); }
  const T* data() const { return static_cast<const T*>(buf_.get()); }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + n_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + n_; }

 private:
  DeviceBuffer buf_;
  size_t n_ = 0;
};

}  // namespace ridge
