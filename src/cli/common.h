// Shared plumbing for subcommands: argument parsing and the one-line error convention.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "kernels/kernels.h"

namespace ridge::cli {

// Prints "ridge: error: <message>" to stderr and returns the exit code (2 usage, 1 runtime).
int report(const Status& status);

// Parses argv into `app`. On --help prints help and returns 0; on a parse error prints one
// error line and returns 2; on success returns nullopt (carry on).
std::optional<int> parse(CLI::App& app, int argc, char** argv);

// --mmap: the model's weights stay in a read-only mapping of the file instead of being read into
// huge pages (gguf::Backing); `backing` receives the choice.
void add_mmap_flag(CLI::App& app, gguf::Backing& backing);

// The whole file at `path` (a text a command reads); usage error "<command>: cannot open <flag>
// '<path>'" when it cannot be read.
Result<std::string> read_text_file(const std::string& path, std::string_view command, std::string_view flag);

// --isa: the kernels to use (empty: the best this CPU runs); usage error for an unknown name.
Result<const kernels::Kernels*> pick_kernels(const std::string& name);
// --device cpu|cuda: the backend a model command runs on (backend/registry.h).
void add_device_option(CLI::App& app, std::string& device);
// The kernel table to bind a model for on `device`: --isa's on the CPU; on a device backend the
// ref table (GGUF's row layout, which the device copies), --isa refused. A one-line error for a
// device this build lacks or this machine has no GPU for, before any model is read.
Result<const kernels::Kernels*> pick_kernels(const std::string& isa, const std::string& device);
// Writes `w` to `path` through `path`.part, which takes the final name only once complete (a
// failed write leaves neither).
Status write_gguf(const gguf::Writer& w, const std::string& path, const gguf::Writer::ProgressFn& progress = {});
// "1.23 GB", "4.56 MB", "7.8 kB", "9 B".
std::string human_bytes(double bytes);
// "[4096, 128]".
template <class T>
std::string shape_str(const std::vector<T>& shape) {
  std::string s;
  for (const T& d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

}  // namespace ridge::cli
