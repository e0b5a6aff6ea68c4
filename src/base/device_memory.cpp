#include "base/device_memory.h"

#include <cstring>
#include <new>

#include "base/huge_pages.h"
#include "base/meminfo.h"

namespace ridge {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    mem_ = std::exchange(o.mem_, nullptr);
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    use_ = o.use_;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (p_ != nullptr) mem_->release(p_, bytes_, use_);
  mem_ = nullptr;
  p_ = nullptr;
  bytes_ = 0;
}

namespace {

constexpr std::align_val_t kScratchAlignment{64};

class HostMemory final : public DeviceMemory {
 public:
  std::string_view name() const override { return "host"; }
  bool host_visible() const override { return true; }

  Result<DeviceBuffer> allocate(size_t bytes, MemoryUse use) override {
    if (bytes == 0) return error("host memory: an allocation of 0 bytes");
    void* p = nullptr;
    if (use == MemoryUse::kStream) {
      p = alloc_huge(bytes).release();  // zero-filled by the mapping
    } else {
      p = ::operator new(bytes, kScratchAlignment, std::nothrow);
      if (p != nullptr) std::memset(p, 0, bytes);
    }
    if (p == nullptr) return error("host memory: cannot allocate {} bytes", bytes);
    return DeviceBuffer(this, p, bytes, use);
  }
  void to_device(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void to_host(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { std::memmove(dst, src, bytes); }
  void zero(void* dst, size_t bytes) override { std::memset(dst, 0, bytes); }
  uint64_t available_bytes() const override { return meminfo_bytes("MemAvailable"); }

 protected:
  void release(void* p, size_t bytes, MemoryUse use) override {
    if (use == MemoryUse::kStream) {
      HugeUnmap{huge_rounded(bytes)}(p);
    } else {
      ::operator delete(p, kScratchAlignment);
    }
  }
};

}  // namespace

DeviceMemory& host_memory() {
  static HostMemory memory;
  return memory;
}

}  // namespace ridge
