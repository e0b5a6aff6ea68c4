// HTTP(S) through libcurl: the two requests `ridge pull` makes, a JSON listing and a file download
// (resumable with a Range request). Redirects are followed; a token goes in an Authorization
// header, which curl does not carry to another host on a redirect.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"

namespace ridge::hub {

struct HttpOptions {
  std::string token;            // bearer token; empty: none
  long connect_timeout_s = 30;  // a host that does not answer
  long stall_timeout_s = 60;    // a transfer below 1 KB/s for this long is cut
};

// GET url; the body of a 2xx answer. Errors name the status (401/403: the token) or curl's cause;
// *unreachable (when given) says whether the server gave no answer at all (no connection, a
// timeout) rather than an error status.
Result<std::string> http_get(const std::string& url, const HttpOptions& opt, bool* unreachable = nullptr);

// Called during a download with the bytes of the file received so far (offset included).
using Progress = std::function<void(int64_t received)>;

// GET url into the file at `path`: appended from `offset` when > 0 (a Range request; a server that
// answers 200 instead of 206 restarts the file from 0). Returns the file's size at the end; an
// interrupted transfer is an error whose message starts with "interrupted" (the caller may resume).
Result<int64_t> http_download(const std::string& url, const std::string& path, int64_t offset,
                              const HttpOptions& opt, const Progress& progress);

}  // namespace ridge::hub
