#include "hub/pull.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/split.h"
#include "hub/http.h"
#include "hub/sha256.h"

namespace ridge::hub {
namespace fs = std::filesystem;
namespace {

constexpr int kAttempts = 5;  // transfers per file (each resumes where the last one stopped)
// Written into a checkpoint folder once all of its files are complete: its file list.
constexpr const char* kCheckpointMarker = ".ridge-checkpoint";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

HttpOptions http_options(const HubConfig& cfg) {
  HttpOptions o;
  o.token = cfg.token;
  return o;
}

Result<std::vector<RepoFile>> list_remote(const HubConfig& cfg, const std::string& repo, const std::string& revision,
                                          bool* unreachable) {
  const std::string url = fmt::format("{}/api/models/{}/tree/{}?recursive=true", cfg.endpoint, repo, revision);
  RIDGE_ASSIGN_OR_RETURN(const std::string body, http_get(url, http_options(cfg), unreachable));
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_array()) return error("{}: the hub's answer is not a file list", url);
  std::vector<RepoFile> files;
  for (const auto& e : j) {
    if (!e.is_object() || !e.contains("type") || e["type"] != "file" || !e.contains("path") || !e["path"].is_string()) continue;
    RepoFile f;
    f.path = e["path"].get<std::string>();
    if (f.path.find("..") != std::string::npos || f.path.empty() || f.path[0] == '/') continue;
    if (e.contains("size") && e["size"].is_number_integer()) f.size = e["size"].get<int64_t>();
    if (e.contains("lfs") && e["lfs"].is_object()) {
      const auto& lfs = e["lfs"];
      if (lfs.contains("oid") && lfs["oid"].is_string()) f.sha256 = lfs["oid"].get<std::string>();
      if (lfs.contains("size") && lfs["size"].is_number_integer()) f.size = lfs["size"].get<int64_t>();
    }
    files.push_back(std::move(f));
  }
  return files;
}

// The files of `repo` already complete in the cache (the listing when the hub is unreachable).
std::vector<RepoFile> list_local(const HubConfig& cfg, const std::string& repo) {
  std::vector<RepoFile> files;
  const fs::path root = fs::path(cfg.cache_dir) / repo;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return files;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().extension() != ".gguf") continue;
    if (!fs::exists(it->path().string() + ".sha256", ec)) continue;  // never finished
    RepoFile f;
    f.path = fs::relative(it->path(), root, ec).string();
    f.size = static_cast<int64_t>(it->file_size(ec));
    files.push_back(std::move(f));
  }
  return files;
}

std::string megabytes(int64_t n) { return fmt::format("{:.1f} MB", static_cast<double>(n) / 1e6); }

// Prints the progress of one file on stderr: redrawn in place on a terminal, else a line at the
// start and one per 10% at most every 5 s (logs).
class ProgressLine {
 public:
  ProgressLine(std::string name, int64_t total, bool enabled)
      : name_(std::move(name)), total_(total), enabled_(enabled), tty_(isatty(2) != 0), start_(Clock::now()) {}
  void update(int64_t got, int64_t from) {
    if (!enabled_) return;
    const auto now = Clock::now();
    const double secs = std::chrono::duration<double>(now - start_).count();
    const int pct = total_ > 0 ? static_cast<int>(100 * got / total_) : 0;
    if (tty_) {
      if (now - last_ < std::chrono::milliseconds(100) && got != total_) return;
      last_ = now;
      const double rate = secs > 0 ? static_cast<double>(got - from) / secs : 0.0;
      const double eta = rate > 0 && total_ > 0 ? static_cast<double>(total_ - got) / rate : 0.0;
      fmt::print(stderr, "\r{}: {:3d}% {} / {}  {:.1f} MB/s  ETA {:.0f} s   ", name_, pct, megabytes(got),
                 megabytes(total_), rate / 1e6, eta);
    } else if (!started_) {
      started_ = true;
      last_ = now;
      fmt::print(stderr, "{}: downloading {}\n", name_, megabytes(total_));
    } else if (pct / 10 > shown_ / 10 && now - last_ >= std::chrono::seconds(5)) {
      shown_ = pct;
      last_ = now;
      fmt::print(stderr, "{}: {}% of {}\n", name_, pct, megabytes(total_));
    }
  }
  void done(int64_t got, int64_t from) {
    if (!enabled_) return;
    const double secs = std::chrono::duration<double>(Clock::now() - start_).count();
    fmt::print(stderr, "{}{}: {} in {:.1f} s ({:.1f} MB/s), sha256 checked\n", tty_ ? "\r" : "", name_, megabytes(got), secs,
               secs > 0 ? static_cast<double>(got - from) / secs / 1e6 : 0.0);
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string name_;
  int64_t total_;
  bool enabled_, tty_;
  Clock::time_point start_, last_{};
  int shown_ = 0;
  bool started_ = false;
};

std::string read_marker(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// One file of the model into the cache: nothing to do when its checked copy is there.
Status fetch_file(const HubConfig& cfg, const std::string& repo, const std::string& revision, const RepoFile& f,
                  const std::string& dest) {
  std::error_code ec;
  const std::string marker = dest + ".sha256", part = dest + ".part";
  if (fs::exists(dest, ec) && fs::exists(marker, ec)) {
    const bool same_size = f.size < 0 || static_cast<int64_t>(fs::file_size(dest, ec)) == f.size;
    if (same_size && (f.sha256.empty() || read_marker(marker) == f.sha256)) return Status();
  }
  fs::create_directories(fs::path(dest).parent_path(), ec);
  if (ec) return error("cannot create '{}': {}", fs::path(dest).parent_path().string(), ec.message());
  const std::string url = fmt::format("{}/{}/resolve/{}/{}", cfg.endpoint, repo, revision, f.path);
  int64_t have = fs::exists(part, ec) ? static_cast<int64_t>(fs::file_size(part, ec)) : 0;
  if (f.size >= 0 && have > f.size) have = 0;
  const int64_t from = have;
  ProgressLine line(f.path, f.size, cfg.progress);
  std::string last_error;
  for (int attempt = 0; attempt < kAttempts && !(f.size >= 0 && have == f.size); ++attempt) {
    auto got = http_download(url, part, have, http_options(cfg), [&](int64_t n) { line.update(n, from); });
    if (got.ok()) {
      have = *got;
      if (f.size < 0) break;  // no size listed: the server's end of the body is the end
      continue;
    }
    last_error = got.status().message();
    if (last_error.rfind("interrupted", 0) != 0) {
      if (have == 0) return got.status();
      have = 0;  // a resume refused (the file changed?): start again once from the beginning
      continue;
    }
    have = fs::exists(part, ec) ? static_cast<int64_t>(fs::file_size(part, ec)) : 0;
  }
  if (f.size >= 0 && have != f.size) {
    return error("{}: {} of {} bytes after {} attempts ({}); run the command again to resume", f.path, have, f.size,
                 kAttempts, last_error.empty() ? "the server sent a short file" : last_error);
  }
  if (!f.sha256.empty()) {
    RIDGE_ASSIGN_OR_RETURN(const std::string sum, sha256_file(part));
    if (sum != f.sha256) {
      fs::remove(part, ec);
      return error("{}: sha256 {} does not match the hub's {}: the download is corrupt and was deleted", f.path, sum,
                   f.sha256);
    }
  }
  fs::rename(part, dest, ec);
  if (ec) return error("cannot rename '{}' to '{}': {}", part, dest, ec.message());
  std::ofstream(marker) << (f.sha256.empty() ? "unchecked" : f.sha256) << "\n";
  line.done(have, from);
  return Status();
}

// A split model: its parts downloaded, merged into one file (what the loader reads) and deleted.
// The merged file's marker lists the parts' digests, so a later pull of the same parts is a hit.
Result<std::string> fetch_split(const HubConfig& cfg, const std::string& repo, const std::string& revision,
                                const std::vector<RepoFile>& parts, const fs::path& root) {
  const std::string merged = (root / merged_name(parts.front().path)).string();
  std::string expected = "merged";
  for (const RepoFile& f : parts) expected += " " + (f.sha256.empty() ? std::to_string(f.size) : f.sha256);
  std::error_code ec;
  if (fs::exists(merged, ec) && read_marker(merged + ".sha256") == expected) return merged;
  std::vector<std::string> paths;
  for (const RepoFile& f : parts) {
    paths.push_back((root / f.path).string());
    RIDGE_RETURN_IF_ERROR(fetch_file(cfg, repo, revision, f, paths.back()));
  }
  RIDGE_RETURN_IF_ERROR(gguf::merge_split(paths, merged));
  std::ofstream(merged + ".sha256") << expected << "\n";
  for (const std::string& p : paths) {
    fs::remove(p, ec);
    fs::remove(p + ".sha256", ec);
  }
  if (cfg.progress) fmt::print(stderr, "{}: {} parts merged\n", merged_name(parts.front().path), parts.size());
  return merged;
}

// A checkpoint repository: its files into the folder, then the marker listing them; the folder
// is the model. A second pull of the same listing transfers nothing.
Result<std::string> fetch_checkpoint(const HubConfig& cfg, const std::string& repo, const std::string& revision,
                                     const std::vector<RepoFile>& files, const fs::path& root) {
  std::string listing;
  for (const RepoFile& f : files) listing += f.path + " " + (f.sha256.empty() ? std::to_string(f.size) : f.sha256) + "\n";
  const std::string marker = (root / kCheckpointMarker).string();
  std::error_code ec;
  if (fs::exists(marker, ec)) {
    std::ifstream in(marker);
    const std::string have((std::istreambuf_iterator<char>(in)), {});
    if (have == listing) return root.string();
    fs::remove(marker, ec);  // another revision: fetch what changed
  }
  for (const RepoFile& f : files) RIDGE_RETURN_IF_ERROR(fetch_file(cfg, repo, revision, f, (root / f.path).string()));
  std::ofstream(marker) << listing;
  if (cfg.progress) fmt::print(stderr, "{}: a checkpoint folder of {} files\n", repo, files.size());
  return root.string();
}

bool is_complete_checkpoint(const fs::path& root) {
  std::error_code ec;
  return fs::exists(root / kCheckpointMarker, ec);
}

}  // namespace

HubConfig hub_config_from_env() {
  HubConfig c;
  c.endpoint = env("HF_ENDPOINT");
  if (c.endpoint.empty()) c.endpoint = "https://huggingface.co";
  while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();
  c.token = env("HF_TOKEN");
  c.cache_dir = env("RIDGE_MODELS");
  if (c.cache_dir.empty()) {
    const std::string xdg = env("XDG_CACHE_HOME"), home = env("HOME");
    c.cache_dir = (xdg.empty() ? home + "/.cache" : xdg) + "/ridge/models";
  }
  return c;
}

Result<std::string> pull(const HubConfig& cfg, const RepoRef& ref, const std::string& revision) {
  bool unreachable = false;
  auto remote = list_remote(cfg, ref.repo, revision, &unreachable);
  std::vector<RepoFile> files;
  bool offline = false;
  if (remote.ok()) {
    files = std::move(*remote);
  } else {
    // An answer that is an error (a missing repository, a token, a garbled listing) stands; only
    // a hub that does not answer falls back to the cache.
    if (!unreachable) return remote.status();
    files = list_local(cfg, ref.repo);
    const fs::path root = fs::path(cfg.cache_dir) / ref.repo;
    if (files.empty() && ref.quant.empty() && is_complete_checkpoint(root)) {
      fmt::print(stderr, "pull: the hub cannot be reached ({}); using the cached checkpoint\n", remote.status().message());
      return root.string();
    }
    if (files.empty()) return remote.status();
    offline = true;
  }
  const fs::path root = fs::path(cfg.cache_dir) / ref.repo;
  if (!offline && !has_model_gguf(files)) {
    RIDGE_ASSIGN_OR_RETURN(const std::vector<RepoFile> checkpoint, pick_checkpoint(files));
    if (!ref.quant.empty()) {
      return usage_error("{} is a checkpoint (safetensors), not GGUF files: :{} does not apply; pull {} and "
                         "quantize with ridge convert DIR OUT.gguf --type {}", ref.repo, ref.quant, ref.repo, ref.quant);
    }
    return fetch_checkpoint(cfg, ref.repo, revision, checkpoint, root);
  }
  RIDGE_ASSIGN_OR_RETURN(const std::vector<RepoFile> model, pick_gguf(files, ref.quant));
  if (offline) {
    fmt::print(stderr, "pull: the hub cannot be reached ({}); using the cached {}\n", remote.status().message(),
               model.front().path);
    return (root / model.front().path).string();
  }
  if (model.size() == 1) {
    RIDGE_RETURN_IF_ERROR(fetch_file(cfg, ref.repo, revision, model.front(), (root / model.front().path).string()));
    return (root / model.front().path).string();
  }
  return fetch_split(cfg, ref.repo, revision, model, root);
}

std::vector<CachedFile> list_cached(const HubConfig& cfg) {
  std::vector<CachedFile> out;
  std::error_code ec;
  const fs::path root(cfg.cache_dir);
  if (!fs::is_directory(root, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().filename() == kCheckpointMarker) {
      const fs::path dir = it->path().parent_path();
      int64_t size = 0;
      for (const auto& f : fs::directory_iterator(dir, ec)) {
        if (f.is_regular_file(ec) && f.path().extension() != ".sha256") size += static_cast<int64_t>(f.file_size(ec));
      }
      out.push_back({fs::relative(dir, root, ec).string() + "/ (checkpoint)", size});
      continue;
    }
    if (!it->is_regular_file(ec) || it->path().extension() != ".gguf") continue;
    if (!fs::exists(it->path().string() + ".sha256", ec)) continue;
    out.push_back({fs::relative(it->path(), root, ec).string(), static_cast<int64_t>(it->file_size(ec))});
  }
  std::sort(out.begin(), out.end(), [](const CachedFile& a, const CachedFile& b) { return a.name < b.name; });
  return out;
}

}  // namespace ridge::hub
