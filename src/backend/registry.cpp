#include "backend/registry.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "backend/cpu/cpu_backend.h"
#if RIDGE_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif
#include "base/check.h"

namespace ridge::backend {
namespace {

Result<std::unique_ptr<model::Backend>> make_cpu(const BackendParams& p) {
  if (p.kernels == nullptr || p.pool == nullptr) {
    return error("backend cpu: needs a kernel table and a thread pool");
  }
  return std::unique_ptr<model::Backend>(std::make_unique<CpuBackend>(*p.kernels, *p.pool));
}

Result<DeviceMemory*> host_memory_of(int /*device*/) { return &host_memory(); }

struct Entry {
  BackendFactory factory = nullptr;
  DeviceMemoryOf memory = host_memory_of;
  DeviceProbe probe = nullptr;
};

struct Registry {
  std::mutex mu;
  std::map<std::string, Entry, std::less<>> entries{
      {"cpu", Entry{make_cpu, host_memory_of}},
#if RIDGE_HAVE_CUDA
      {std::string(cuda::kCudaBackendName), Entry{cuda::make_backend, cuda::backend_memory, cuda::probe_bandwidth}},
#endif
  };
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool register_backend(std::string_view name, BackendFactory factory, DeviceMemoryOf memory,
                      DeviceProbe probe) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  const Entry e{factory, memory != nullptr ? memory : host_memory_of, probe};
  const bool name_is_new = r.entries.emplace(std::string(name), e).second;
  RIDGE_CHECK(name_is_new);  // two registrations of one name: a build error, not an input's
  return true;
}

namespace {

Result<Entry> find_backend(std::string_view name) {
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    if (auto it = r.entries.find(name); it != r.entries.end()) return it->second;
  }
  std::string names;
  for (const std::string& n : backend_names()) names += (names.empty() ? "" : ", ") + n;
  return usage_error("unknown backend '{}' (registered: {})", name, names);
}

}  // namespace

Result<std::unique_ptr<model::Backend>> create_backend(std::string_view name,
                                                       const BackendParams& params) {
  RIDGE_ASSIGN_OR_RETURN(const Entry e, find_backend(name));
  return e.factory(params);
}

Result<DeviceMemory*> device_memory(std::string_view name, int device) {
  RIDGE_ASSIGN_OR_RETURN(const Entry e, find_backend(name));
  return e.memory(device);
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, entry] : r.entries) names.push_back(name);
  return names;
}

Result<DeviceBandwidth> probe_device(std::string_view name, int device, uint64_t buffer_bytes,
                                     int repetitions) {
  RIDGE_ASSIGN_OR_RETURN(const Entry e, find_backend(name));
  if (e.probe == nullptr) return usage_error("backend {} has no device probe of its own (ridge probe measures the CPU)", name);
  return e.probe(device, buffer_bytes, repetitions);
}

}  // namespace ridge::backend
