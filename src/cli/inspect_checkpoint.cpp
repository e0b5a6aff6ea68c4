#include "cli/inspect_checkpoint.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "checkpoint/safetensors.h"
#include "cli/common.h"

namespace ridge::cli {
namespace {

using json = nlohmann::json;

// The config's fields a reader looks for first, where present.
constexpr const char* kConfigKeys[] = {
    "architectures", "model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
    "max_position_embeddings", "rope_theta", "rms_norm_eps", "tie_word_embeddings", "torch_dtype"};

Result<json> read_config(const std::string& dir) {
  const std::filesystem::path p = std::filesystem::path(dir) / "config.json";
  if (!std::filesystem::exists(p)) return json::object();
  RIDGE_ASSIGN_OR_RETURN(const std::string text, read_text_file(p.string(), "inspect", "config.json"));
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return error("{}: not a JSON object", p.string());
  json out = json::object();
  for (const char* k : kConfigKeys) {
    if (j.contains(k)) out[k] = j[k];
  }
  return out;
}

}  // namespace

int inspect_checkpoint(const std::string& dir, bool as_json) {
  auto config = read_config(dir);
  if (!config.ok()) return report(config.status());
  auto set = checkpoint::SafetensorsSet::open_dir(dir);
  if (!set.ok()) return report(set.status());
  json r;
  r["folder"] = dir;
  r["config"] = *config;
  r["files"] = set->files().size();
  std::map<std::string, std::pair<int64_t, uint64_t>> by_dtype;  // count, bytes
  uint64_t total = 0;
  json tensors = json::array();
  for (const checkpoint::Tensor* t : set->tensors()) {
    auto& d = by_dtype[std::string(checkpoint::dtype_name(t->dtype))];
    d.first += 1;
    d.second += t->data.size();
    total += t->data.size();
    tensors.push_back({{"name", t->name}, {"dtype", checkpoint::dtype_name(t->dtype)}, {"shape", t->shape},
                       {"bytes", t->data.size()}});
  }
  r["tensor_bytes"] = total;
  for (const auto& [name, d] : by_dtype) r["by_dtype"][name] = {{"count", d.first}, {"bytes", d.second}};
  r["tensors"] = tensors;
  if (as_json) {
    fmt::print("{}\n", r.dump(2));
    return 0;
  }
  fmt::print("checkpoint {}: {} safetensors file(s), {} tensors, {}\n", dir, set->files().size(),
             set->tensors().size(), human_bytes(static_cast<double>(total)));
  if (!config->empty()) {
    fmt::print("config:\n");
    for (const auto& [k, v] : config->items()) fmt::print("  {} = {}\n", k, v.dump());
  }
  fmt::print("by dtype:\n");
  for (const auto& [name, d] : by_dtype) {
    fmt::print("  {:<8} {:>6} tensors  {:>12}\n", name, d.first, human_bytes(static_cast<double>(d.second)));
  }
  fmt::print("tensors:\n");
  for (const checkpoint::Tensor* t : set->tensors()) {
    fmt::print("  {:<48} {:<6} {}\n", t->name, checkpoint::dtype_name(t->dtype), shape_str(t->shape));
  }
  return 0;
}

}  // namespace ridge::cli
