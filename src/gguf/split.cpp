#include "gguf/split.h"

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace ridge::gguf {

Status merge_split(const std::vector<std::string>& parts, const std::string& out_path) {
  if (parts.empty()) return error("merge: no parts");
  std::vector<File> files;
  for (const std::string& p : parts) {
    RIDGE_ASSIGN_OR_RETURN(File f, File::open(p));
    files.push_back(std::move(f));
  }
  const int64_t n = static_cast<int64_t>(parts.size());
  int64_t tensors = 0;
  for (int64_t k = 0; k < n; ++k) {
    RIDGE_ASSIGN_OR_RETURN(const int64_t no, files[k].get_int_or("split.no", -1));
    RIDGE_ASSIGN_OR_RETURN(const int64_t count, files[k].get_int_or("split.count", -1));
    if (no != k || count != n) {
      return error("{}: split.no {} of split.count {}, expected part {} of {}", parts[k], no, count, k, n);
    }
    tensors += static_cast<int64_t>(files[k].tensors().size());
  }
  RIDGE_ASSIGN_OR_RETURN(const int64_t listed, files[0].get_int_or("split.tensors.count", tensors));
  if (listed != tensors) return error("{}: split.tensors.count {} but the parts hold {}", parts[0], listed, tensors);
  Writer w(files[0].alignment());
  for (const auto& [key, value] : files[0].metadata()) {
    if (key.rfind("split.", 0) != 0) w.set(key, value);
  }
  for (const File& f : files) {
    for (const TensorInfo& t : f.tensors()) {
      const uint8_t* src = t.data;
      const uint64_t bytes = t.n_bytes;
      RIDGE_RETURN_IF_ERROR(w.add_tensor(t.name, t.type, t.shape, [src, bytes](std::span<uint8_t> dst) {
        if (dst.size() != bytes) return error("merge: tensor size mismatch");
        std::memcpy(dst.data(), src, bytes);
        return Status();
      }));
    }
  }
  const std::string tmp = out_path + ".tmp";
  RIDGE_RETURN_IF_ERROR(w.write(tmp));
  std::error_code ec;
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) return error("cannot rename '{}' to '{}': {}", tmp, out_path, ec.message());
  return Status();
}

}  // namespace ridge::gguf
