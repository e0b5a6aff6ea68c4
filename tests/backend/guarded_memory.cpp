#include "guarded_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/check.h"

namespace ridge::backend::testing {
namespace {

size_t page_rounded(size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

GuardedMemory& GuardedMemory::instance() {
  static GuardedMemory memory;
  return memory;
}

Result<DeviceBuffer> GuardedMemory::allocate(size_t bytes, MemoryUse use) {
  if (bytes == 0) return error("guarded memory: an allocation of 0 bytes");
  const size_t size = page_rounded(bytes);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return error("guarded memory: cannot map {} bytes", bytes);
  maps_[p] = size;
  protect(p, size, depth_ > 0);
  return DeviceBuffer(this, p, bytes, use);
}

void GuardedMemory::release(void* p, size_t /*bytes*/, MemoryUse /*use*/) {
  auto it = maps_.find(p);
  RIDGE_CHECK(it != maps_.end());
  munmap(p, it->second);
  maps_.erase(it);
}

bool GuardedMemory::holds(const void* p) const {
  auto it = maps_.upper_bound(const_cast<void*>(p));
  if (it == maps_.begin()) return false;
  --it;
  const auto* base = static_cast<const uint8_t*>(it->first);
  return static_cast<const uint8_t*>(p) < base + it->second;
}

void GuardedMemory::expect_held(const void* p) const {
  if (strict_ && p != nullptr && !holds(p)) {
    std::fprintf(stderr, "guarded memory: an op was given host pointer %p\n", p);
    std::abort();
  }
}

void GuardedMemory::protect(void* p, size_t bytes, bool open) const {
  RIDGE_CHECK(mprotect(p, bytes, open ? PROT_READ | PROT_WRITE : PROT_NONE) == 0);
}

void GuardedMemory::protect_all(bool open) const {
  for (const auto& [p, bytes] : maps_) protect(p, bytes, open);
}

GuardedMemory::Open::Open(GuardedMemory& m) : m_(&m) {
  if (m_->depth_++ == 0) m_->protect_all(true);
}

GuardedMemory::Open::~Open() {
  if (--m_->depth_ == 0) m_->protect_all(false);
}

void GuardedMemory::to_device(void* dst, const void* src, size_t bytes) {
  Open open(*this);
  std::memcpy(dst, src, bytes);
}

void GuardedMemory::to_host(void* dst, const void* src, size_t bytes) {
  Open open(*this);
  std::memcpy(dst, src, bytes);
}

void GuardedMemory::copy(void* dst, const void* src, size_t bytes) {
  Open open(*this);
  std::memmove(dst, src, bytes);
}

void GuardedMemory::zero(void* dst, size_t bytes) {
  Open open(*this);
  std::memset(dst, 0, bytes);
}

}  // namespace ridge::backend::testing
