#include "backend/registry.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "backend/cpu/cpu_backend.h"
#include "base/check.h"

namespace ridge::backend {
namespace {

Result<std::unique_ptr<model::Backend>> make_cpu(const BackendParams& p) {
  if (p.kernels == nullptr || p.pool == nullptr) {
    return error("backend cpu: needs a kernel table and a thread pool");
  }
  return std::unique_ptr<model::Backend>(std::make_unique<CpuBackend>(*p.kernels, *p.pool));
}

struct Registry {
  std::mutex mu;
  std::map<std::string, BackendFactory, std::less<>> factories{{"cpu", make_cpu}};
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool register_backend(std::string_view name, BackendFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  const bool name_is_new = r.factories.emplace(std::string(name), factory).second;
  RIDGE_CHECK(name_is_new);  // two registrations of one name: a build error, not an input's
  return true;
}

Result<std::unique_ptr<model::Backend>> create_backend(std::string_view name,
                                                       const BackendParams& params) {
  BackendFactory factory = nullptr;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    if (auto it = r.factories.find(name); it != r.factories.end()) factory = it->second;
  }
  if (factory == nullptr) {
    std::string names;
    for (const std::string& n : backend_names()) names += (names.empty() ? "" : ", ") + n;
    return usage_error("unknown backend '{}' (registered: {})", name, names);
  }
  return factory(params);
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

}  // namespace ridge::backend
