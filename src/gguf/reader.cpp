#include "gguf/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>
#include <unordered_set>

#include "base/checked_math.h"
#include "base/huge_pages.h"
#include "base/meminfo.h"
#include "base/thread_pool.h"
#include "gguf/utf8.h"

namespace ridge::gguf {

uint64_t TensorInfo::rows() const {
  uint64_t r = 1;
  for (size_t i = 1; i < shape.size(); ++i) r *= shape[i];
  return r;
}

// Cursor over the file bytes; every read is bounds-checked and failures name the field and offset.
class File::Parser {
 public:
  Parser(std::span<const uint8_t> bytes, const std::string& name, const ReadLimits& limits)
      : bytes_(bytes), name_(name), limits_(limits) {}

  Status fail(std::string_view field, uint64_t at, std::string_view why) const {
    return error("{}: {} at offset {}: {}", name_, field, at, why);
  }

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  template <typename T>
  Result<T> read(std::string_view field) {
    if (remaining() < sizeof(T)) {
      return fail(field, pos_, fmt::format("file truncated (need {} bytes, {} left)", sizeof(T), remaining()));
    }
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  Result<std::string> read_string(std::string_view field, bool must_be_utf8) {
    const uint64_t at = pos_;
    RIDGE_ASSIGN_OR_RETURN(uint64_t len, read<uint64_t>(field));
    if (len > limits_.max_string_bytes) {
      return fail(field, at, fmt::format("string length {} exceeds the limit of {} bytes", len, limits_.max_string_bytes));
    }
    if (len > remaining()) {
      return fail(field, at, fmt::format("string of {} bytes runs past the end of the file ({} bytes left)", len, remaining()));
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
    if (must_be_utf8 && !is_valid_utf8(s)) return fail(field, at, "not valid UTF-8");
    pos_ += len;
    return s;
  }

  Result<Value> read_value(ValueType type, std::string_view field, uint32_t depth) {
    switch (type) {
      case ValueType::kUint8: return scalar<uint8_t, 0>(field);
      case ValueType::kInt8: return scalar<int8_t, 1>(field);
      case ValueType::kUint16: return scalar<uint16_t, 2>(field);
      case ValueType::kInt16: return scalar<int16_t, 3>(field);
      case ValueType::kUint32: return scalar<uint32_t, 4>(field);
      case ValueType::kInt32: return scalar<int32_t, 5>(field);
      case ValueType::kFloat32: return scalar<float, 6>(field);
      case ValueType::kBool: {
        const uint64_t at = pos_;
        RIDGE_ASSIGN_OR_RETURN(uint8_t b, read<uint8_t>(field));
        if (b > 1) return fail(field, at, fmt::format("bool value {} is neither 0 nor 1", b));
        return Value{ValueStorage(std::in_place_index<7>, b == 1)};
      }
      case ValueType::kString: {
        RIDGE_ASSIGN_OR_RETURN(std::string s, read_string(field, false));
        return Value{ValueStorage(std::in_place_index<8>, std::move(s))};
      }
      case ValueType::kArray: return read_array(field, depth);
      case ValueType::kUint64: return scalar<uint64_t, 10>(field);
      case ValueType::kInt64: return scalar<int64_t, 11>(field);
      case ValueType::kFloat64: return scalar<double, 12>(field);
    }
    return fail(field, pos_, "unknown value type");
  }

  Result<ValueType> read_type(std::string_view field) {
    const uint64_t at = pos_;
    RIDGE_ASSIGN_OR_RETURN(uint32_t t, read<uint32_t>(field));
    if (t >= kValueTypeCount) return fail(field, at, fmt::format("unknown value type {}", t));
    return static_cast<ValueType>(t);
  }

 private:
  template <typename T, size_t kIndex>
  Result<Value> scalar(std::string_view field) {
    RIDGE_ASSIGN_OR_RETURN(T x, read<T>(field));
    return Value{ValueStorage(std::in_place_index<kIndex>, x)};
  }

  static uint64_t min_encoded_size(ValueType t) {
    switch (t) {
      case ValueType::kUint8: case ValueType::kInt8: case ValueType::kBool: return 1;
      case ValueType::kUint16: case ValueType::kInt16: return 2;
      case ValueType::kUint32: case ValueType::kInt32: case ValueType::kFloat32: return 4;
      case ValueType::kString: case ValueType::kUint64: case ValueType::kInt64:
      case ValueType::kFloat64: return 8;
      case ValueType::kArray: return 12;  // element type + count
    }
    return 1;
  }

  Result<Value> read_array(std::string_view field, uint32_t depth) {
    const uint64_t at = pos_;
    if (depth >= limits_.max_array_depth) {
      return fail(field, at, fmt::format("arrays nested deeper than {}", limits_.max_array_depth));
    }
    RIDGE_ASSIGN_OR_RETURN(ValueType elem, read_type(field));
    const uint64_t count_at = pos_;
    RIDGE_ASSIGN_OR_RETURN(uint64_t count, read<uint64_t>(field));
    if (count > limits_.max_array_items) {
      return fail(field, count_at, fmt::format("array of {} items exceeds the limit of {}", count, limits_.max_array_items));
    }
    // Each element needs at least min_encoded_size bytes: this bounds the allocation by the file size.
    auto need = checked_mul(count, min_encoded_size(elem));
    if (!need || *need > remaining()) {
      return fail(field, count_at, fmt::format("array of {} {} items cannot fit in the {} bytes left", count, value_type_name(elem), remaining()));
    }
    total_items_ += count;
    if (total_items_ > limits_.max_metadata_items) {
      return fail(field, count_at, "too many metadata values in total");
    }
    ArrayValue a;
    a.elem_type = elem;
    a.items.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      RIDGE_ASSIGN_OR_RETURN(Value v, read_value(elem, field, depth + 1));
      a.items.push_back(std::move(v));
    }
    return Value{ValueStorage(std::in_place_index<9>, std::move(a))};
  }

  std::span<const uint8_t> bytes_;
  const std::string& name_;
  const ReadLimits& limits_;
  uint64_t pos_ = 0;
  uint64_t total_items_ = 0;

  friend class File;
};

Result<File> File::parse(std::span<const uint8_t> bytes, std::string name, const ReadLimits& limits) {
  File f;
  f.path_ = std::move(name);
  f.bytes_ = bytes;
  Parser p(bytes, f.path_, limits);

  RIDGE_ASSIGN_OR_RETURN(uint32_t magic, p.read<uint32_t>("magic"));
  if (magic != kMagic) return p.fail("magic", 0, fmt::format("not a GGUF file (magic 0x{:08x}, expected \"GGUF\")", magic));
  RIDGE_ASSIGN_OR_RETURN(f.version_, p.read<uint32_t>("version"));
  if (f.version_ != 2 && f.version_ != 3) {
    return p.fail("version", 4, fmt::format("unsupported GGUF version {} (supported: 2, 3)", f.version_));
  }
  RIDGE_ASSIGN_OR_RETURN(uint64_t n_tensors, p.read<uint64_t>("tensor_count"));
  RIDGE_ASSIGN_OR_RETURN(uint64_t n_kv, p.read<uint64_t>("metadata_kv_count"));
  // A tensor info takes at least 24 bytes, a key/value at least 13: bounds the counts by the file.
  if (n_tensors > limits.max_tensors || n_tensors > p.remaining() / 24) {
    return p.fail("tensor_count", 8, fmt::format("absurd tensor count {}", n_tensors));
  }
  if (n_kv > limits.max_kv || n_kv > p.remaining() / 13) {
    return p.fail("metadata_kv_count", 16, fmt::format("absurd metadata count {}", n_kv));
  }

  std::unordered_set<std::string> keys;
  f.kv_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint64_t at = p.pos();
    RIDGE_ASSIGN_OR_RETURN(std::string key, p.read_string(fmt::format("metadata key #{}", i), true));
    if (key.empty()) return p.fail(fmt::format("metadata key #{}", i), at, "empty key");
    if (!keys.insert(key).second) return p.fail(fmt::format("metadata key '{}'", key), at, "duplicate key");
    const std::string field = fmt::format("metadata '{}'", key);
    RIDGE_ASSIGN_OR_RETURN(ValueType type, p.read_type(field));
    RIDGE_ASSIGN_OR_RETURN(Value v, p.read_value(type, field, 0));
    f.kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const Value* a = f.find("general.alignment")) {
    auto al = a->as_uint();
    if (a->type() != ValueType::kUint32 || !al || *al == 0 || (*al & (*al - 1)) != 0) {
      return p.fail("metadata 'general.alignment'", 0, fmt::format("must be a u32 power of two, got {}", a->to_display()));
    }
    f.alignment_ = *al;
  }

  std::unordered_set<std::string> names;
  f.tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    const uint64_t at = p.pos();
    TensorInfo t;
    RIDGE_ASSIGN_OR_RETURN(t.name, p.read_string(fmt::format("tensor #{} name", i), true));
    const std::string field = fmt::format("tensor '{}'", t.name);
    if (!names.insert(t.name).second) return p.fail(field, at, "duplicate tensor name");
    const uint64_t dims_at = p.pos();
    RIDGE_ASSIGN_OR_RETURN(uint32_t n_dims, p.read<uint32_t>(field));
    if (n_dims == 0 || n_dims > limits.max_dims) {
      return p.fail(field, dims_at, fmt::format("{} dimensions (must be 1..{})", n_dims, limits.max_dims));
    }
    uint64_t n_elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim_at = p.pos();
      RIDGE_ASSIGN_OR_RETURN(uint64_t dim, p.read<uint64_t>(field));
      if (dim == 0 || dim > (1ull << 62)) return p.fail(field, dim_at, fmt::format("dimension {} is {}", d, dim));
      auto prod = checked_mul(n_elems, dim);
      if (!prod) return p.fail(field, dim_at, "element count overflows");
      n_elems = *prod;
      t.shape.push_back(dim);
    }
    const uint64_t type_at = p.pos();
    RIDGE_ASSIGN_OR_RETURN(uint32_t type_id, p.read<uint32_t>(field));
    auto tr = ggml_type_traits(type_id);
    if (!tr) return p.fail(field, type_at, fmt::format("unknown tensor type id {}", type_id));
    t.type = tr->type;
    if (t.shape[0] % tr->block_elems != 0) {
      return p.fail(field, dims_at, fmt::format("row of {} elements is not a multiple of the {} block size {}",
                                                t.shape[0], tr->name, tr->block_elems));
    }
    auto n_bytes = checked_mul(n_elems / tr->block_elems, tr->block_bytes);
    if (!n_bytes) return p.fail(field, dims_at, "byte size overflows");
    t.n_elements = n_elems;
    t.n_bytes = *n_bytes;
    const uint64_t off_at = p.pos();
    RIDGE_ASSIGN_OR_RETURN(t.offset, p.read<uint64_t>(field));
    if (t.offset % f.alignment_ != 0) {
      return p.fail(field, off_at, fmt::format("data offset {} is not a multiple of the alignment {}", t.offset, f.alignment_));
    }
    f.tensors_.push_back(std::move(t));
  }

  auto data_off = checked_align_up(p.pos(), f.alignment_);
  if (!data_off || (n_tensors > 0 && *data_off > bytes.size())) {
    return p.fail("tensor data", p.pos(), "data section starts past the end of the file");
  }
  f.data_offset_ = n_tensors > 0 ? *data_off : std::min<uint64_t>(*data_off, bytes.size());

  // Bounds and overlap: sort by offset, each tensor must end before the next begins.
  std::vector<size_t> order(f.tensors_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return f.tensors_[a].offset < f.tensors_[b].offset; });
  uint64_t prev_end = 0;
  const TensorInfo* prev = nullptr;
  for (size_t idx : order) {
    TensorInfo& t = f.tensors_[idx];
    auto start = checked_add(f.data_offset_, t.offset);
    auto end = start ? checked_add(*start, t.n_bytes) : std::nullopt;
    if (!end || *end > bytes.size()) {
      return error("{}: tensor '{}': data ends at byte {}, file has {}", f.path_, t.name,
                   end ? fmt::format("{}", *end) : std::string("(overflow)"), bytes.size());
    }
    if (prev && t.offset < prev_end) {
      return error("{}: tensor '{}': data at offset {} overlaps tensor '{}' (which ends at {})", f.path_, t.name,
                   t.offset, prev->name, prev_end);
    }
    prev_end = t.offset + t.n_bytes;
    prev = &t;
    t.data = bytes.data() + *start;
  }
  return f;
}

namespace {

// Bytes [begin, end) of `fd` into dst + begin; "" on success, else the error.
std::string read_range(int fd, uint8_t* dst, size_t begin, size_t end) {
  constexpr size_t kChunk = size_t{64} << 20;
  for (size_t done = begin; done < end;) {
    const ssize_t n = pread(fd, dst + done, std::min(kChunk, end - done), static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fmt::format("read at offset {}: {}", done, std::strerror(errno));
    if (n == 0) return fmt::format("file ended at offset {} while being read", done);
    done += static_cast<size_t>(n);
  }
  return {};
}

// The whole of `fd` (`size` bytes) read into huge-page memory, by several threads: the time goes
// into faulting in and zeroing the pages and into the copy from the page cache, both per core.
Result<std::shared_ptr<void>> read_into_huge_pages(int fd, size_t size, const std::string& path) {
  HugeBuffer buffer = alloc_huge(size);
  if (!buffer) return error("{}: cannot allocate {} bytes to read it into", path, size);
  auto* dst = static_cast<uint8_t*>(buffer.get());
  constexpr size_t kPerThread = size_t{256} << 20;
  const size_t n = std::clamp<size_t>(size / kPerThread, 1,
                                      std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8));
  std::vector<std::string> errors(n);
  // Split on huge-page boundaries, so that no page is faulted in by two threads.
  auto bound = [&](size_t i) {
    const size_t pages = (size + kHugePageBytes - 1) / kHugePageBytes;
    return std::min(size, pages * i / n * kHugePageBytes);
  };
  run_on_threads(static_cast<int>(n), [&](int i) {
    const auto k = static_cast<size_t>(i);
    errors[k] = read_range(fd, dst, bound(k), bound(k + 1));
  });
  for (const std::string& e : errors) {
    if (!e.empty()) return error("{}: {}", path, e);
  }
  const HugeUnmap unmap = buffer.get_deleter();
  return std::shared_ptr<void>(buffer.release(), unmap);
}

}  // namespace

std::string_view backing_name(Backing backing) {
  return backing == Backing::kHugePages ? "huge pages" : "mapped";
}

Result<File> File::open(const std::string& path, const ReadLimits& limits, Backing backing) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return error("{}: cannot stat: {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return error("{}: not a regular file", path);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < 4) {
    ::close(fd);
    return error("{}: magic at offset 0: file truncated ({} bytes), not a GGUF file", path, size);
  }
  std::shared_ptr<void> mapping;
  if (backing == Backing::kHugePages) {
    // A copy that would not fit (with room to spare: 1/8 more and 512 MiB) leaves the file
    // mapped, where the page cache can still page it in and out.
    const uint64_t avail = meminfo_bytes("MemAvailable");
    if (avail != 0 && size + size / 8 + (uint64_t{512} << 20) > avail) backing = Backing::kMapped;
  }
  if (backing == Backing::kHugePages) {
    Result<std::shared_ptr<void>> copy = read_into_huge_pages(fd, size, path);
    ::close(fd);
    if (!copy.ok()) return copy.status();
    mapping = std::move(*copy);
  } else {
    void* addr = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    int e = errno;
    ::close(fd);
    if (addr == MAP_FAILED) return error("{}: cannot map: {}", path, std::strerror(e));
    mapping = std::shared_ptr<void>(addr, [size](void* a) { munmap(a, size); });
  }
  auto bytes = std::span<const uint8_t>(static_cast<const uint8_t*>(mapping.get()), size);
  RIDGE_ASSIGN_OR_RETURN(File f, parse(bytes, path, limits));
  if (backing == Backing::kHugePages) f.writable_ = std::span<uint8_t>(static_cast<uint8_t*>(mapping.get()), size);
  f.backing_ = backing;
  f.mapping_ = std::move(mapping);
  return f;
}

Result<File> File::adopt(std::shared_ptr<void> owner, std::span<uint8_t> bytes, std::string name,
                         const ReadLimits& limits) {
  RIDGE_ASSIGN_OR_RETURN(File f, parse(bytes, std::move(name), limits));
  f.writable_ = bytes;
  f.backing_ = Backing::kHugePages;
  f.mapping_ = std::move(owner);
  return f;
}

const Value* File::find(std::string_view key) const {
  for (const auto& [k, v] : kv_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string File::architecture() const {
  const Value* v = find("general.architecture");
  const std::string* s = v ? v->as_string() : nullptr;
  return s ? *s : std::string();
}

}  // namespace ridge::gguf
