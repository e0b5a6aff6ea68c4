// Backends by name. A backend is a folder (src/backend/<name>/, or a test's own) and one
// registration: register_backend("name", factory), typically from a static initializer in the
// folder's registration file. The engine and the CLI create backends by name and never name a
// backend's class.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "model/backend.h"

namespace ridge::backend {

// What a backend is made from. The CPU backend runs on `pool` with `kernels` (the table the
// model's weights were bound for); a device backend takes its device index.
struct BackendParams {
  const kernels::Kernels* kernels = nullptr;
  ThreadPool* pool = nullptr;
  int device = 0;
  // The model it will run (null: not known; a backend that runs only some architectures then
  // accepts any, and its unsupported ops fail when called).
  const model::ModelConfig* config = nullptr;
};

using BackendFactory = Result<std::unique_ptr<model::Backend>> (*)(const BackendParams& params);
// The memory of a backend's device (what its backends' memory() return), before any backend is
// made: the engine sizes its KV pool from it. An error where the device is not there.
using DeviceMemoryOf = Result<DeviceMemory*> (*)(int device);

// A device's memory bandwidth as measured on it (ridge probe --device; the roof of a device's run).
struct DeviceBandwidth {
  std::string device;  // the device's own name
  double read_gbs = 0;  // a read pass over the buffer
  double copy_gbs = 0;  // a copy within it, bytes read plus bytes written
  uint64_t buffer_bytes = 0;
  int repetitions = 0;  // timed passes, median kept
};
using DeviceProbe = Result<DeviceBandwidth> (*)(int device, uint64_t buffer_bytes, int repetitions);

// Adds a backend; returns true (for `static const bool registered = register_backend(...)`).
// A second registration of a name CHECK-fails. memory null: the host's. probe null: none (the
// CPU's figures are analysis/probe.h's).
bool register_backend(std::string_view name, BackendFactory factory, DeviceMemoryOf memory = nullptr,
                      DeviceProbe probe = nullptr);
// A backend by name ("cpu" is always there), or an error naming the registered ones.
Result<std::unique_ptr<model::Backend>> create_backend(std::string_view name,
                                                       const BackendParams& params);
// The memory of backend `name`'s device `device`, or the error create_backend would give.
Result<DeviceMemory*> device_memory(std::string_view name, int device = 0);
std::vector<std::string> backend_names();  // sorted
// Measures backend `name`'s device, or an error (no such backend or device, or no probe of its own).
Result<DeviceBandwidth> probe_device(std::string_view name, int device, uint64_t buffer_bytes,
                                     int repetitions);

}  // namespace ridge::backend
