// Paths of the shared test data and temporary files, for tests in any layer.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ridge::testing {

// The tiny llama model in ../shared (tests skip when it is absent).
inline const std::string kStories =
    std::string(RIDGE_SHARED_DIR) + "/models/stories260K/stories260K.gguf";
// ridge's own quality references (tests/quality/data).
inline const std::string kQualityData = std::string(RIDGE_SOURCE_DIR) + "/tests/quality/data/";

// Writes text to a file in the temporary folder whose name ends with this process's id.
inline std::string temp_file(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()));
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace ridge::testing
