#include "backend/cuda/bandwidth.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace ridge::backend::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void read_kernel(const float4* __restrict__ p, uint64_t n, float* sums) {
  float s = 0.0f;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    const float4 v = p[i];
    s += v.x + v.y + v.z + v.w;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(&sums[blockIdx.x], s);
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

BandwidthTimes time_bandwidth(uint64_t bytes, int reps) {
  BandwidthTimes t;
  bytes = bytes / 32 * 32;
  float4* buf = nullptr;
  float* sums = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  int sms = 0, device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const unsigned blocks = static_cast<unsigned>(std::max(1, sms) * 8);
  if (err == cudaSuccess) err = cudaMalloc(&buf, bytes);
  if (err == cudaSuccess) err = cudaMalloc(&sums, blocks * sizeof(float));
  if (err == cudaSuccess) err = cudaMemset(buf, 1, bytes);  // not zeros: a pass over real data
  if (err == cudaSuccess) err = cudaEventCreate(&start);
  if (err == cudaSuccess) err = cudaEventCreate(&stop);
  std::vector<float> read_ms, copy_ms;
  const uint64_t n = bytes / sizeof(float4);
  for (int r = -1; err == cudaSuccess && r < reps; ++r) {  // r = -1: the warm-up
    float ms = 0;
    cudaEventRecord(start);
    read_kernel<<<blocks, kThreads>>>(buf, n, sums);
    cudaEventRecord(stop);
    err = cudaEventSynchronize(stop);
    if (err == cudaSuccess) err = cudaEventElapsedTime(&ms, start, stop);
    if (r >= 0) read_ms.push_back(ms);
    cudaEventRecord(start);
    cudaMemcpyAsync(reinterpret_cast<char*>(buf) + bytes / 2, buf, bytes / 2, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    if (err == cudaSuccess) err = cudaEventSynchronize(stop);
    if (err == cudaSuccess) err = cudaEventElapsedTime(&ms, start, stop);
    if (r >= 0) copy_ms.push_back(ms);
  }
  if (err == cudaSuccess) err = cudaGetLastError();
  t.read_ms = median(read_ms);
  t.copy_ms = median(copy_ms);
  t.error = static_cast<int>(err);
  if (start != nullptr) cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  cudaFree(sums);
  cudaFree(buf);
  return t;
}

}  // namespace ridge::backend::cuda
