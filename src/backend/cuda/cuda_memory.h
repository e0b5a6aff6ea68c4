// A CUDA device's memory (base/device_memory.h): cudaMalloc'd buffers, copies through the legacy
// default stream (which orders them after the backend's kernels), the device's free memory as
// available_bytes. One object per device, made on first use.
#pragma once

#include <string>
#include <string_view>

#include "base/device_memory.h"
#include "base/status.h"

namespace ridge::backend::cuda {

class CudaMemory final : public DeviceMemory {
 public:
  explicit CudaMemory(int device);
  std::string_view name() const override { return name_; }
  bool host_visible() const override { return false; }
  Result<DeviceBuffer> allocate(size_t bytes, MemoryUse use) override;
  void to_device(void* dst, const void* src, size_t bytes) override;
  void to_host(void* dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* dst, size_t bytes) override;
  uint64_t available_bytes() const override;
  int device() const { return device_; }

 protected:
  void release(void* p, size_t bytes, MemoryUse use) override;

 private:
  int device_;
  std::string name_;
};

// The devices CUDA sees (0 where there is no driver or no GPU), and why none, in one line.
int device_count();
std::string no_device_reason();
// Device `device`'s memory, or an error where the device is not there.
Result<CudaMemory*> memory_of(int device);
// Aborts with the call, the CUDA error and where it happened when `err` is not success (the
// device ops return nothing: a failed launch or copy is a broken device or a bug, not an input).
void check_cuda(int err, const char* what, const char* file, int line);
#define RIDGE_CUDA_CHECK(call) ::ridge::backend::cuda::check_cuda(static_cast<int>(call), #call, __FILE__, __LINE__)

}  // namespace ridge::backend::cuda
