#include "checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ridge::checkpoint {
namespace {

struct DtypeInfo {
  Dtype dtype;
  std::string_view name;
  uint64_t bytes;
};

constexpr std::array<DtypeInfo, 15> kDtypes = {{
    {Dtype::kBool, "BOOL", 1}, {Dtype::kU8, "U8", 1},   {Dtype::kI8, "I8", 1},
    {Dtype::kF8E5M2, "F8_E5M2", 1}, {Dtype::kF8E4M3, "F8_E4M3", 1}, {Dtype::kI16, "I16", 2},
    {Dtype::kU16, "U16", 2}, {Dtype::kF16, "F16", 2},  {Dtype::kBF16, "BF16", 2},
    {Dtype::kI32, "I32", 4}, {Dtype::kU32, "U32", 4},  {Dtype::kF32, "F32", 4},
    {Dtype::kF64, "F64", 8}, {Dtype::kI64, "I64", 8},  {Dtype::kU64, "U64", 8},
}};

const DtypeInfo& info(Dtype d) { return kDtypes[static_cast<size_t>(d)]; }

// The tensor's byte count from its shape, or an error on a negative or overflowing shape.
Result<uint64_t> shape_bytes(const std::vector<int64_t>& shape, Dtype d, const std::string& where) {
  uint64_t n = dtype_bytes(d);
  for (int64_t dim : shape) {
    if (dim < 0) return error("{}: a negative dimension {}", where, dim);
    if (dim != 0 && n > UINT64_MAX / static_cast<uint64_t>(dim)) return error("{}: its shape overflows", where);
    n *= static_cast<uint64_t>(dim);
  }
  return n;
}

Result<Tensor> parse_entry(const std::string& file, const std::string& name, const nlohmann::json& e,
                           uint64_t data_bytes, std::array<uint64_t, 2>& range) {
  const std::string where = fmt::format("{}: tensor '{}'", file, name);
  if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() || !e.contains("shape") ||
      !e["shape"].is_array() || !e.contains("data_offsets") || !e["data_offsets"].is_array() ||
      e["data_offsets"].size() != 2) {
    return error("{}: needs dtype, shape and data_offsets [begin, end]", where);
  }
  Tensor t;
  t.name = name;
  const Result<Dtype> dtype = dtype_from_name(e["dtype"].get<std::string>());
  if (!dtype.ok()) return dtype.status().with_prefix(where);
  t.dtype = *dtype;
  for (const auto& d : e["shape"]) {
    if (!d.is_number_integer()) return error("{}: a shape of non-integers", where);
    t.shape.push_back(d.get<int64_t>());
  }
  for (size_t i = 0; i < 2; ++i) {
    const auto& o = e["data_offsets"][i];
    if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<int64_t>() >= 0)) {
      return error("{}: data_offsets must be non-negative integers", where);
    }
    range[i] = o.get<uint64_t>();
  }
  RIDGE_ASSIGN_OR_RETURN(const uint64_t bytes, shape_bytes(t.shape, t.dtype, where));
  if (range[0] > range[1] || range[1] > data_bytes) {
    return error("{}: bytes [{}, {}) are outside the {} bytes of data", where, range[0], range[1], data_bytes);
  }
  if (range[1] - range[0] != bytes) {
    return error("{}: {} bytes for a {} tensor of {} bytes", where, range[1] - range[0],
                 dtype_name(t.dtype), bytes);
  }
  return t;
}

}  // namespace

std::string_view dtype_name(Dtype d) { return info(d).name; }
uint64_t dtype_bytes(Dtype d) { return info(d).bytes; }

Result<Dtype> dtype_from_name(std::string_view name) {
  for (const DtypeInfo& i : kDtypes) {
    if (i.name == name) return i.dtype;
  }
  return error("unknown safetensors dtype '{}'", name);
}

int64_t Tensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<SafetensorsFile> SafetensorsFile::parse(std::span<const uint8_t> bytes, std::string name) {
  if (bytes.size() < 8) return error("{}: {} bytes is too short for a safetensors file", name, bytes.size());
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | bytes[static_cast<size_t>(i)];
  if (header > kMaxHeaderBytes || header > bytes.size() - 8) {
    return error("{}: a header of {} bytes in a file of {}", name, header, bytes.size());
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<size_t>(header));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return error("{}: the header is not a JSON object", name);
  const std::span<const uint8_t> data = bytes.subspan(8 + static_cast<size_t>(header));
  SafetensorsFile f;
  f.path_ = std::move(name);
  std::vector<std::pair<std::array<uint64_t, 2>, size_t>> ranges;
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) return error("{}: __metadata__ is not an object", f.path_);
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) return error("{}: __metadata__ '{}' is not a string", f.path_, mk);
        f.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    std::array<uint64_t, 2> range{};
    RIDGE_ASSIGN_OR_RETURN(Tensor t, parse_entry(f.path_, key, value, data.size(), range));
    t.data = data.subspan(static_cast<size_t>(range[0]), static_cast<size_t>(range[1] - range[0]));
    ranges.push_back({range, f.tensors_.size()});
    f.tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t end = 0;
  for (const auto& [r, i] : ranges) {
    if (r[0] != end) {
      return error("{}: tensor '{}' starts at byte {} of the data, not {} (ranges must tile the data)",
                   f.path_, f.tensors_[i].name, r[0], end);
    }
    end = r[1];
  }
  if (end != data.size()) {
    return error("{}: the tensors cover {} bytes of data, the file holds {}", f.path_, end, data.size());
  }
  return f;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error("cannot open '{}'", path);
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return error("'{}' is not a regular file", path);
  }
  const auto size = static_cast<size_t>(st.st_size);
  std::shared_ptr<void> mapping;
  std::span<const uint8_t> bytes;
  if (size > 0) {
    void* addr = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
      ::close(fd);
      return error("cannot map '{}'", path);
    }
    mapping = std::shared_ptr<void>(addr, [size](void* a) { munmap(a, size); });
    bytes = std::span<const uint8_t>(static_cast<const uint8_t*>(addr), size);
  }
  ::close(fd);
  RIDGE_ASSIGN_OR_RETURN(SafetensorsFile f, parse(bytes, path));
  f.mapping_ = std::move(mapping);
  return f;
}

const Tensor* SafetensorsFile::find(std::string_view name) const {
  for (const Tensor& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Result<SafetensorsSet> SafetensorsSet::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  SafetensorsSet set;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::map<std::string, std::string> weight_map;  // tensor -> file
  if (fs::exists(index)) {
    std::ifstream in(index);
    std::stringstream ss;
    ss << in.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return error("{}: not an index with a weight_map", index.string());
    }
    std::vector<std::string> names;
    for (const auto& [tensor, file] : j["weight_map"].items()) {
      if (!file.is_string()) return error("{}: the file of '{}' is not a string", index.string(), tensor);
      const std::string f = file.get<std::string>();
      if (f.empty() || f.find('/') != std::string::npos || f.starts_with(".")) {
        return error("{}: '{}' is not a file of this folder", index.string(), f);
      }
      weight_map[tensor] = f;
      if (std::find(names.begin(), names.end(), f) == names.end()) names.push_back(f);
    }
    for (const std::string& f : names) {
      RIDGE_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open((fs::path(dir) / f).string()));
      set.files_.push_back(std::move(file));
    }
  } else if (fs::exists(fs::path(dir) / "model.safetensors")) {
    RIDGE_ASSIGN_OR_RETURN(SafetensorsFile file,
                           SafetensorsFile::open((fs::path(dir) / "model.safetensors").string()));
    set.files_.push_back(std::move(file));
  } else {
    return error("{}: no model.safetensors or model.safetensors.index.json", dir);
  }
  for (const SafetensorsFile& f : set.files_) {
    const std::string file_name = fs::path(f.path()).filename().string();
    for (const Tensor& t : f.tensors()) {
      if (!weight_map.empty()) {
        auto it = weight_map.find(t.name);
        if (it == weight_map.end() || it->second != file_name) continue;  // not where the index puts it
      }
      if (!set.by_name_.emplace(t.name, &t).second) {
        return error("{}: tensor '{}' is in two files", dir, t.name);
      }
      set.order_.push_back(&t);
    }
  }
  for (const auto& [tensor, file] : weight_map) {
    if (set.by_name_.find(tensor) == set.by_name_.end()) {
      return error("{}: the index puts '{}' in {}, which does not hold it", dir, tensor, file);
    }
  }
  return set;
}

const Tensor* SafetensorsSet::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

}  // namespace ridge::checkpoint
