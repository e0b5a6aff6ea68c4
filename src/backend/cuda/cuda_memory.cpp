#include "backend/cuda/cuda_memory.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

namespace ridge::backend::cuda {

void check_cuda(int err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "ridge: fatal: %s failed at %s:%d: %s\n", what, file, line,
               cudaGetErrorString(static_cast<cudaError_t>(err)));
  std::abort();
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

std::string no_device_reason() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  (void)cudaGetLastError();
  if (err != cudaSuccess) return std::string("no CUDA device (") + cudaGetErrorString(err) + ")";
  return n == 0 ? "no CUDA device" : "";
}

CudaMemory::CudaMemory(int device) : device_(device), name_("cuda:" + std::to_string(device)) {}

Result<DeviceBuffer> CudaMemory::allocate(size_t bytes, MemoryUse use) {
  if (bytes == 0) return error("{}: cannot allocate 0 bytes", name_);
  RIDGE_CUDA_CHECK(cudaSetDevice(device_));
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return error("{}: cannot allocate {:.1f} MiB ({:.1f} MiB free)", name_,
                 static_cast<double>(bytes) / (1 << 20), static_cast<double>(available_bytes()) / (1 << 20));
  }
  RIDGE_CUDA_CHECK(cudaMemset(p, 0, bytes));
  return DeviceBuffer(this, p, bytes, use);
}

void CudaMemory::release(void* p, size_t /*bytes*/, MemoryUse /*use*/) {
  RIDGE_CUDA_CHECK(cudaFree(p));
}

void CudaMemory::to_device(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) RIDGE_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void CudaMemory::to_host(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) RIDGE_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void CudaMemory::copy(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) RIDGE_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}

void CudaMemory::zero(void* dst, size_t bytes) {
  if (bytes > 0) RIDGE_CUDA_CHECK(cudaMemset(dst, 0, bytes));
}

uint64_t CudaMemory::available_bytes() const {
  size_t free_bytes = 0, total = 0;
  if (cudaSetDevice(device_) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return free_bytes;
}

Result<CudaMemory*> memory_of(int device) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<CudaMemory>> memories;
  const int n = device_count();
  if (n == 0) return error("backend cuda: {}", no_device_reason());
  if (device < 0 || device >= n) return usage_error("backend cuda: device {} of {} (0..{})", device, n, n - 1);
  std::lock_guard lock(mu);
  if (memories.empty()) memories.resize(static_cast<size_t>(n));
  auto& m = memories[static_cast<size_t>(device)];
  if (!m) m = std::make_unique<CudaMemory>(device);
  return m.get();
}

}  // namespace ridge::backend::cuda
