#include "hub/pick.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

namespace ridge::hub {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_model_gguf(std::string_view path) {
  const std::string p = lower(path);
  return ends_with(p, ".gguf") && p.find("mmproj") == std::string::npos;
}

// "stem-00002-of-00003.gguf" -> {stem, 2, 3}; part 0 for a single file.
struct SplitName {
  std::string stem;
  int part = 0, count = 0;
};
SplitName split_name(const std::string& path) {
  static const std::regex kSplit(R"((.*)-(\d{5})-of-(\d{5})\.gguf$)", std::regex::icase);
  std::smatch m;
  if (std::regex_match(path, m, kSplit)) return {m[1].str(), std::stoi(m[2].str()), std::stoi(m[3].str())};
  return {path, 0, 0};
}

// The quantization tags present, for the error message: the last separator-delimited word of each
// file's name that looks like one (Q4_K_M, IQ2_XXS, F16, BF16, ...).
std::string tags_of(const std::vector<RepoFile>& files) {
  static const std::regex kTag(R"((^|[-._/])((I?Q\d[A-Z0-9_]*)|F16|BF16|F32|MXFP4[A-Z0-9_]*|TQ\d_\d)(?=[-.]))", std::regex::icase);
  std::set<std::string> tags;
  for (const auto& f : files) {
    if (!is_model_gguf(f.path)) continue;
    for (std::sregex_iterator it(f.path.begin(), f.path.end(), kTag), end; it != end; ++it) {
      std::string t = (*it)[2].str();
      for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      tags.insert(t);
    }
  }
  std::string out;
  for (const auto& t : tags) out += (out.empty() ? "" : ", ") + t;
  return out.empty() ? "none" : out;
}

}  // namespace

std::string merged_name(const std::string& part_path) {
  const SplitName s = split_name(part_path);
  return s.count == 0 ? part_path : s.stem + ".gguf";
}

Result<RepoRef> parse_repo_ref(std::string_view text) {
  RepoRef r;
  const size_t colon = text.find(':');
  r.repo = std::string(text.substr(0, colon));
  if (colon != std::string_view::npos) r.quant = std::string(text.substr(colon + 1));
  static const std::regex kRepo(R"([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*)");
  static const std::regex kQuant(R"([A-Za-z0-9_]+)");
  if (!std::regex_match(r.repo, kRepo) || r.repo.find("..") != std::string::npos) {
    return usage_error("'{}' is not a Hugging Face repository: expected user/repo[:QUANT]", text);
  }
  if (colon != std::string_view::npos && !std::regex_match(r.quant, kQuant)) {
    return usage_error("'{}': the quantization after ':' must be a tag like Q4_K_M", text);
  }
  return r;
}

bool has_quant_tag(std::string_view path, std::string_view quant) {
  if (quant.empty()) return false;
  const std::string p = lower(path), q = lower(quant);
  auto separator = [](char c) { return c == '-' || c == '.' || c == '_' || c == '/'; };
  for (size_t at = p.find(q); at != std::string::npos; at = p.find(q, at + 1)) {
    const bool before = at == 0 || separator(p[at - 1]);
    const size_t end = at + q.size();
    const bool after = end < p.size() && (p[end] == '-' || p[end] == '.' || p[end] == '/');
    if (before && after) return true;
  }
  return false;
}

bool has_model_gguf(const std::vector<RepoFile>& files) {
  return std::any_of(files.begin(), files.end(), [](const RepoFile& f) { return is_model_gguf(f.path); });
}

Result<std::vector<RepoFile>> pick_checkpoint(const std::vector<RepoFile>& files) {
  static const std::set<std::string> kWanted = {"config.json", "model.safetensors.index.json", "tokenizer.json",
                                                "tokenizer_config.json", "tokenizer.model", "chat_template.jinja",
                                                "generation_config.json", "special_tokens_map.json"};
  std::vector<RepoFile> out;
  bool config = false, weights = false, tokenizer = false;
  for (const RepoFile& f : files) {
    if (f.path.find('/') != std::string::npos) continue;  // sub-folders: other formats (original/, onnx/)
    const bool tensors = f.path.ends_with(".safetensors");
    if (!tensors && !kWanted.contains(f.path)) continue;
    config |= f.path == "config.json";
    weights |= tensors;
    tokenizer |= f.path == "tokenizer.json" || f.path == "tokenizer.model";
    out.push_back(f);
  }
  if (!config || !weights || !tokenizer) {
    return error("the repository has no GGUF file, and is not a checkpoint either (it lacks {})",
                 !config ? "config.json" : !weights ? "*.safetensors weights" : "tokenizer.json or tokenizer.model");
  }
  std::sort(out.begin(), out.end(), [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
  return out;
}

Result<std::vector<RepoFile>> pick_gguf(const std::vector<RepoFile>& files, std::string_view quant) {
  std::vector<const RepoFile*> models;
  for (const auto& f : files) {
    if (is_model_gguf(f.path)) models.push_back(&f);
  }
  if (models.empty()) return error("the repository has no GGUF file");
  std::vector<const RepoFile*> hits;
  const std::string_view want = quant.empty() ? kDefaultQuant : quant;
  for (const RepoFile* f : models) {
    if (has_quant_tag(f->path, want)) hits.push_back(f);
  }
  if (hits.empty() && quant.empty()) {
    std::set<std::string> stems;
    for (const RepoFile* f : models) stems.insert(split_name(f->path).stem);
    if (stems.size() == 1) hits = models;
  }
  if (hits.empty()) {
    return error("no GGUF file for {} in the repository (it has: {}); name one with :QUANT",
                 quant.empty() ? std::string(kDefaultQuant) + " (the default)" : std::string(quant), tags_of(files));
  }
  // The first model by path, with all of its parts.
  std::sort(hits.begin(), hits.end(), [](const RepoFile* a, const RepoFile* b) { return a->path < b->path; });
  const SplitName first = split_name(hits.front()->path);
  std::map<int, RepoFile> parts;
  for (const RepoFile* f : hits) {
    const SplitName s = split_name(f->path);
    if (s.stem == first.stem && s.count == first.count) parts[s.part] = *f;
  }
  std::vector<RepoFile> out;
  if (first.count == 0) return std::vector<RepoFile>{parts.begin()->second};
  for (int k = 1; k <= first.count; ++k) {
    if (parts.count(k) == 0) return error("{}: part {} of {} is missing from the repository", first.stem, k, first.count);
    out.push_back(parts[k]);
  }
  return out;
}

}  // namespace ridge::hub
