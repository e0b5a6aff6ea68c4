#include "checkpoint/hf_folder.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/huge_pages.h"
#include "checkpoint/hf_gemma.h"

namespace ridge::checkpoint {
namespace {

namespace fs = std::filesystem;

// The file's text; "" when it is absent.
Result<std::string> optional_text(const fs::path& p) {
  if (!fs::exists(p)) return std::string();
  std::ifstream in(p, std::ios::binary);
  if (!in) return error("cannot read {}", p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<CheckpointFolder> CheckpointFolder::open(const std::string& dir) {
  if (!fs::is_directory(dir)) return error("{} is not a checkpoint folder", dir);
  CheckpointFolder f;
  f.dir_ = dir;
  RIDGE_ASSIGN_OR_RETURN(const std::string config, optional_text(fs::path(dir) / "config.json"));
  if (config.empty()) return error("{} has no config.json", dir);
  RIDGE_ASSIGN_OR_RETURN(f.config_, parse_hf_config(config));
  RIDGE_ASSIGN_OR_RETURN(f.tokenizer_.tokenizer_json, optional_text(fs::path(dir) / "tokenizer.json"));
  RIDGE_ASSIGN_OR_RETURN(f.tokenizer_.tokenizer_model, optional_text(fs::path(dir) / "tokenizer.model"));
  if (f.tokenizer_.tokenizer_json.empty() && f.tokenizer_.tokenizer_model.empty()) {
    return error("{} has neither tokenizer.json nor tokenizer.model", dir);
  }
  RIDGE_ASSIGN_OR_RETURN(f.tokenizer_.tokenizer_config_json, optional_text(fs::path(dir) / "tokenizer_config.json"));
  RIDGE_ASSIGN_OR_RETURN(f.tokenizer_.chat_template, optional_text(fs::path(dir) / "chat_template.jinja"));
  RIDGE_ASSIGN_OR_RETURN(f.weights_, SafetensorsSet::open_dir(dir));
  return f;
}

Status CheckpointFolder::add_to(gguf::Writer& w) const {
  RIDGE_RETURN_IF_ERROR(convert_checkpoint(config_, weights_, w).with_prefix(dir_));
  RIDGE_RETURN_IF_ERROR(convert_tokenizer(tokenizer_, config_.n_vocab, w).with_prefix(dir_));
  // Gemma's SentencePiece text gets no space in front, whatever its normalizer says (llama.cpp's
  // converter writes the same).
  if (is_gemma(config_) && !tokenizer_.tokenizer_model.empty()) {
    w.set("tokenizer.ggml.add_space_prefix", gguf::make_bool(false));
  }
  return ok_status();
}

Result<gguf::File> load_checkpoint(const std::string& dir) {
  RIDGE_ASSIGN_OR_RETURN(const CheckpointFolder folder, CheckpointFolder::open(dir));
  gguf::Writer w;
  RIDGE_RETURN_IF_ERROR(folder.add_to(w));
  const uint64_t size = w.file_size();
  HugeBuffer buffer = alloc_huge(static_cast<size_t>(size));
  if (!buffer) return error("{}: cannot allocate {} bytes for the converted model", dir, size);
  const std::span<uint8_t> bytes(static_cast<uint8_t*>(buffer.get()), static_cast<size_t>(size));
  RIDGE_RETURN_IF_ERROR(w.write_to(bytes).with_prefix(dir));
  const HugeUnmap unmap = buffer.get_deleter();
  std::shared_ptr<void> owner(buffer.release(), unmap);
  return gguf::File::adopt(std::move(owner), bytes, dir);
}

}  // namespace ridge::checkpoint
