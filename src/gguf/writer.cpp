#include "gguf/writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/checked_math.h"
#include "gguf/reader.h"

namespace ridge::gguf {
namespace {

class ByteSink {
 public:
  void u8(uint8_t x) { buf.push_back(x); }
  template <typename T>
  void pod(T x) {
    raw(&x, sizeof(T));
  }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, size_t n) {
    const size_t at = buf.size();
    buf.resize(at + n);
    if (n) std::memcpy(buf.data() + at, p, n);
  }
  void value(const Value& v) {
    std::visit(
        [this](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            str(x);
          } else if constexpr (std::is_same_v<T, ArrayValue>) {
            pod<uint32_t>(static_cast<uint32_t>(x.elem_type));
            pod<uint64_t>(x.items.size());
            for (const auto& item : x.items) value(item);
          } else if constexpr (std::is_same_v<T, bool>) {
            u8(x ? 1 : 0);
          } else {
            pod<T>(x);
          }
        },
        v.v);
  }
  std::vector<uint8_t> buf;
};

}  // namespace

void Writer::set(std::string key, Value value) {
  for (auto& [k, v] : kv_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  kv_.emplace_back(std::move(key), std::move(value));
}

bool Writer::erase(std::string_view key) {
  const auto it = std::find_if(kv_.begin(), kv_.end(), [&](const auto& kv) { return kv.first == key; });
  if (it == kv_.end()) return false;
  kv_.erase(it);
  return true;
}

Status Writer::add_tensor(std::string name, GgmlType type, std::vector<uint64_t> shape, FillFn fill) {
  for (const auto& t : tensors_) {
    if (t.name == name) return error("gguf writer: duplicate tensor '{}'", name);
  }
  if (shape.empty() || shape.size() > 4) return error("gguf writer: tensor '{}' has {} dimensions", name, shape.size());
  uint64_t n = 1;
  for (uint64_t d : shape) {
    auto p = checked_mul(n, d);
    if (!p || d == 0) return error("gguf writer: tensor '{}' has a bad shape", name);
    n = *p;
  }
  const auto& tr = traits(type);
  if (shape[0] % tr.block_elems != 0) {
    return error("gguf writer: tensor '{}': row of {} is not a multiple of the {} block size {}", name, shape[0],
                 tr.name, tr.block_elems);
  }
  const uint64_t bytes = n / tr.block_elems * tr.block_bytes;
  tensors_.push_back(PendingTensor{std::move(name), type, std::move(shape), bytes, std::move(fill)});
  return ok_status();
}

Status Writer::add_tensor_data(std::string name, GgmlType type, std::vector<uint64_t> shape,
                               std::span<const uint8_t> data) {
  std::vector<uint8_t> copy(data.begin(), data.end());
  const std::string label = name;
  return add_tensor(std::move(name), type, std::move(shape),
                    [copy = std::move(copy), label](std::span<uint8_t> dst) -> Status {
                      if (dst.size() != copy.size()) {
                        return error("gguf writer: tensor '{}' has {} bytes of data, needs {}", label, copy.size(),
                                     dst.size());
                      }
                      std::memcpy(dst.data(), copy.data(), copy.size());
                      return ok_status();
                    });
}

uint64_t Writer::total_tensor_bytes() const {
  uint64_t total = 0;
  for (const auto& t : tensors_) total += t.n_bytes;
  return total;
}

std::vector<Writer::TensorEntry> Writer::tensor_entries() const {
  std::vector<TensorEntry> out;
  out.reserve(tensors_.size());
  for (const auto& t : tensors_) out.push_back(TensorEntry{t.name, t.type, t.shape});
  return out;
}

std::vector<uint8_t> Writer::header() const {
  ByteSink h;
  h.pod<uint32_t>(kMagic);
  h.pod<uint32_t>(3);
  h.pod<uint64_t>(tensors_.size());
  const bool has_alignment_key = [&] {
    for (const auto& kv : kv_) {
      if (kv.first == "general.alignment") return true;
    }
    return false;
  }();
  const bool write_alignment = !has_alignment_key && alignment_ != kDefaultAlignment;
  h.pod<uint64_t>(kv_.size() + (write_alignment ? 1 : 0));
  for (const auto& [k, v] : kv_) {
    h.str(k);
    h.pod<uint32_t>(static_cast<uint32_t>(v.type()));
    h.value(v);
  }
  if (write_alignment) {
    h.str("general.alignment");
    h.pod<uint32_t>(static_cast<uint32_t>(ValueType::kUint32));
    h.pod<uint32_t>(static_cast<uint32_t>(alignment_));
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    h.str(t.name);
    h.pod<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (uint64_t d : t.shape) h.pod<uint64_t>(d);
    h.pod<uint32_t>(static_cast<uint32_t>(t.type));
    h.pod<uint64_t>(offset);
    offset = (offset + t.n_bytes + alignment_ - 1) / alignment_ * alignment_;
  }
  while (h.buf.size() % alignment_ != 0) h.u8(0);
  return std::move(h.buf);
}

uint64_t Writer::file_size() const {
  uint64_t size = header().size();
  for (const auto& t : tensors_) size += (t.n_bytes + alignment_ - 1) / alignment_ * alignment_;
  return size;
}

Status Writer::write_to(std::span<uint8_t> dst) const {
  if (dst.size() != file_size()) return error("gguf writer: {} bytes for a file of {}", dst.size(), file_size());
  uint64_t pos = 0;
  return emit(
      [&](std::span<const uint8_t> bytes) -> Status {
        std::memcpy(dst.data() + pos, bytes.data(), bytes.size());
        pos += bytes.size();
        return ok_status();
      },
      {});
}

Status Writer::emit(const std::function<Status(std::span<const uint8_t>)>& sink, const ProgressFn& progress) const {
  RIDGE_RETURN_IF_ERROR(sink(header()));

  const uint64_t total = total_tensor_bytes();
  uint64_t done = 0;
  std::vector<uint8_t> data;
  for (const auto& t : tensors_) {
    const uint64_t padded = (t.n_bytes + alignment_ - 1) / alignment_ * alignment_;
    data.assign(padded, 0);
    RIDGE_RETURN_IF_ERROR(t.fill(std::span<uint8_t>(data.data(), t.n_bytes)).with_prefix(t.name));
    RIDGE_RETURN_IF_ERROR(sink(data));
    done += t.n_bytes;
    if (progress) progress(done, total);
  }
  return ok_status();
}

Status Writer::write(const std::string& path, const ProgressFn& progress) const {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return error("{}: cannot create: {}", path, std::strerror(errno));
  RIDGE_RETURN_IF_ERROR(emit(
      [&](std::span<const uint8_t> bytes) -> Status {
        if (std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size()) {
          return error("{}: write failed: {}", path, std::strerror(errno));
        }
        return ok_status();
      },
      progress));
  if (std::fclose(f.release()) != 0) return error("{}: close failed: {}", path, std::strerror(errno));
  return ok_status();
}

Result<std::vector<uint8_t>> Writer::write_to_memory() const {
  std::vector<uint8_t> out;
  RIDGE_RETURN_IF_ERROR(emit(
      [&](std::span<const uint8_t> bytes) -> Status {
        out.insert(out.end(), bytes.begin(), bytes.end());
        return ok_status();
      },
      {}));
  return out;
}

}  // namespace ridge::gguf
