#include "hub/http.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>

namespace ridge::hub {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Easy {
  CURL* h = nullptr;
  curl_slist* headers = nullptr;
  char error[CURL_ERROR_SIZE] = {};
  Easy() {
    global_init();
    h = curl_easy_init();
  }
  ~Easy() {
    curl_slist_free_all(headers);
    if (h != nullptr) curl_easy_cleanup(h);
  }
  Easy(const Easy&) = delete;
  Easy& operator=(const Easy&) = delete;
};

void common_options(Easy& e, const std::string& url, const HttpOptions& opt) {
  curl_easy_setopt(e.h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e.h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(e.h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(e.h, CURLOPT_CONNECTTIMEOUT, opt.connect_timeout_s);
  curl_easy_setopt(e.h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(e.h, CURLOPT_LOW_SPEED_TIME, opt.stall_timeout_s);
  curl_easy_setopt(e.h, CURLOPT_ERRORBUFFER, e.error);
  curl_easy_setopt(e.h, CURLOPT_USERAGENT, "ridge/0.1");
  curl_easy_setopt(e.h, CURLOPT_NOSIGNAL, 1L);
  if (!opt.token.empty()) {
    e.headers = curl_slist_append(e.headers, ("Authorization: Bearer " + opt.token).c_str());
  }
  curl_easy_setopt(e.h, CURLOPT_HTTPHEADER, e.headers);
}

long status_of(Easy& e) {
  long code = 0;
  curl_easy_getinfo(e.h, CURLINFO_RESPONSE_CODE, &code);
  return code;
}

Status status_error(long code, const std::string& url) {
  if (code == 401 || code == 403) {
    return error("HTTP {} for {}: the repository needs a token with access to it (set HF_TOKEN)", code, url);
  }
  if (code == 404) return error("HTTP 404 for {}: no such repository, revision or file", url);
  return error("HTTP {} for {}", code, url);
}

size_t append_to_string(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

struct FileSink {
  std::FILE* f = nullptr;
  Easy* easy = nullptr;
  int64_t start = 0;      // bytes already in the file before this transfer
  int64_t written = 0;    // bytes of this transfer
  bool checked = false;   // whether the answer's status was looked at
  bool restart = false;   // a 200 to a Range request: the file starts again from 0
  const Progress* progress = nullptr;
};

size_t write_to_file(char* data, size_t size, size_t n, void* out) {
  auto* s = static_cast<FileSink*>(out);
  if (!s->checked) {
    s->checked = true;
    const long code = status_of(*s->easy);
    if (code >= 300) return 0;  // an error page: nothing written (curl reports a write error)
    if (s->start > 0 && code == 200) {
      s->restart = true;
      if (std::fflush(s->f) != 0 || ftruncate(fileno(s->f), 0) != 0 || std::fseek(s->f, 0, SEEK_SET) != 0) return 0;
      s->start = 0;
    }
  }
  if (std::fwrite(data, 1, size * n, s->f) != size * n) return 0;
  s->written += static_cast<int64_t>(size * n);
  if (s->progress != nullptr && *s->progress) (*s->progress)(s->start + s->written);
  return size * n;
}

}  // namespace

Result<std::string> http_get(const std::string& url, const HttpOptions& opt, bool* unreachable) {
  if (unreachable != nullptr) *unreachable = false;
  Easy e;
  if (e.h == nullptr) return error("cannot start libcurl");
  common_options(e, url, opt);
  std::string body;
  curl_easy_setopt(e.h, CURLOPT_WRITEFUNCTION, append_to_string);
  curl_easy_setopt(e.h, CURLOPT_WRITEDATA, &body);
  const CURLcode rc = curl_easy_perform(e.h);
  if (rc != CURLE_OK) {
    if (unreachable != nullptr) *unreachable = true;
    return error("{}: {}", url, e.error[0] != 0 ? e.error : curl_easy_strerror(rc));
  }
  const long code = status_of(e);
  if (code < 200 || code >= 300) return status_error(code, url);
  return body;
}

Result<int64_t> http_download(const std::string& url, const std::string& path, int64_t offset,
                              const HttpOptions& opt, const Progress& progress) {
  Easy e;
  if (e.h == nullptr) return error("cannot start libcurl");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), offset > 0 ? "ab" : "wb"), std::fclose);
  if (f == nullptr) return error("cannot write '{}'", path);
  common_options(e, url, opt);
  FileSink sink;
  sink.f = f.get();
  sink.easy = &e;
  sink.start = offset;
  sink.progress = &progress;
  curl_easy_setopt(e.h, CURLOPT_WRITEFUNCTION, write_to_file);
  curl_easy_setopt(e.h, CURLOPT_WRITEDATA, &sink);
  if (offset > 0) curl_easy_setopt(e.h, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(offset));
  const CURLcode rc = curl_easy_perform(e.h);
  const long code = status_of(e);
  if (std::fflush(f.get()) != 0) return error("write error in '{}'", path);
  if (code >= 300 || (code != 0 && code < 200)) return status_error(code, url);
  if (rc != CURLE_OK) {
    return error("interrupted after {} bytes of {}: {}", sink.start + sink.written, url,
                 e.error[0] != 0 ? e.error : curl_easy_strerror(rc));
  }
  return sink.start + sink.written;
}

}  // namespace ridge::hub
