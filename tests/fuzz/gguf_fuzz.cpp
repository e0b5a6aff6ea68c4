// libFuzzer target: the GGUF reader must turn any bytes into a File or a Status, never a crash,
// hang or unbounded allocation. The typed getters and tensor walk run on every parsed file.
#include <cstddef>
#include <cstdint>
#include <span>

#include "gguf/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ridge::gguf::ReadLimits limits;
  limits.max_string_bytes = 1 << 20;
  limits.max_array_items = 1 << 20;
  auto f = ridge::gguf::File::parse(std::span<const uint8_t>(data, size), "fuzz.gguf", limits);
  if (!f.ok()) return 0;
  for (const auto& [key, value] : f->metadata()) {
    (void)value.to_display();
    (void)f->get_string_array(key);
    (void)f->get_int(key);
  }
  uint64_t sum = 0;
  for (const auto& t : f->tensors()) {
    if (t.n_bytes > 0) sum += t.data[0] + t.data[t.n_bytes - 1];  // must be inside the buffer
  }
  return static_cast<int>(sum & 0);
}
