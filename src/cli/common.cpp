#include "cli/common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/registry.h"

namespace ridge::cli {

void add_mmap_flag(CLI::App& app, gguf::Backing& backing) {
  app.add_flag_callback(
      "--mmap", [&backing] { backing = gguf::Backing::kMapped; },
      "map the weights file instead of reading it into huge pages: opens at once and shares the "
      "page cache, but decode streams 4 KiB pages (slower)");
}

int report(const Status& status) {
  if (status.ok()) return 0;
  fmt::print(stderr, "ridge: error: {}\n", status.message());
  return status.exit_code();
}

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    fmt::print("{}", app.help("", CLI::AppFormatMode::All));
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    for (char& c : what) {
      if (c == '\n') c = ' ';
    }
    return report(Status::usage(fmt::format("{} {}: {} (see --help)", "ridge", app.get_name(), what)));
  }
  return std::nullopt;
}

Result<std::string> read_text_file(const std::string& path, std::string_view command, std::string_view flag) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return usage_error("{}: cannot open {} '{}'", command, flag, path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<const kernels::Kernels*> pick_kernels(const std::string& name) {
  if (name.empty()) return &kernels::kernels_for(kernels::best_isa());
  auto isa = kernels::isa_from_name(name);
  if (!isa) return usage_error("--isa must be ref, avx2 or avx512, got '{}'", name);
  if (!kernels::isa_supported(*isa)) return error("--isa {}: this CPU does not support it", name);
  return &kernels::kernels_for(*isa);
}

void add_device_option(CLI::App& app, std::string& device) {
  app.add_option("--device", device, "backend: cpu or cuda (a GPU; builds with nvcc)")->capture_default_str();
}

Result<const kernels::Kernels*> pick_kernels(const std::string& isa, const std::string& device) {
  if (device == "cpu") return pick_kernels(isa);
  const std::vector<std::string> names = backend::backend_names();
  if (device != "cuda" || std::find(names.begin(), names.end(), device) == names.end()) {
    if (device == "cuda") return usage_error("--device cuda: this ridge was built without the CUDA backend (no nvcc)");
    return usage_error("--device must be cpu or cuda, got '{}'", device);
  }
  if (!isa.empty()) return usage_error("--isa {}: picks CPU kernels; --device {} runs its own", isa, device);
  RIDGE_RETURN_IF_ERROR(backend::device_memory(device).status().with_prefix("--device " + device));
  return &kernels::kernels_for(kernels::Isa::kRef);
}

Status write_gguf(const gguf::Writer& w, const std::string& path, const gguf::Writer::ProgressFn& progress) {
  const std::string part = path + ".part";
  Status s = w.write(part, progress);
  std::error_code ec;
  if (!s.ok()) {
    std::filesystem::remove(part, ec);
    return s;
  }
  std::filesystem::rename(part, path, ec);
  if (ec) return error("{}: cannot rename from {}: {}", path, part, ec.message());
  return ok_status();
}

std::string human_bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

}  // namespace ridge::cli
