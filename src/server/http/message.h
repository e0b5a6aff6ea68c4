// What a route handler sees of HTTP: a complete request (headers and a body read within the
// server's limits) and an exchange through which it answers, once or as a chunked stream.
// Nothing here depends on the HTTP library (src/server/http/server.cpp hides it).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ridge::server::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without its query
  std::string query;   // after '?', "" when none
  Headers headers;     // as received (names in their original case)
  std::string body;
  std::string remote_addr;

  // The first value of a header (names compare case-insensitively); "" when absent.
  std::string header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  Headers headers;  // extra headers (Retry-After, WWW-Authenticate, Allow, ...)
  std::string body;
};

// One request's answer. Exactly one of respond() or begin_stream() ... end_stream() is used;
// the writes stop at the server's write deadline when the client does not read.
class Exchange {
 public:
  virtual ~Exchange() = default;
  // Sends a complete response.
  virtual void respond(Response res) = 0;
  // Starts a chunked response (the body comes from write_chunk); false when the client is gone.
  virtual bool begin_stream(int status, std::string_view content_type, const Headers& headers) = 0;
  // Sends one chunk; false when the client is gone or did not take it before the deadline.
  virtual bool write_chunk(std::string_view data) = 0;
  // Ends the chunked body.
  virtual void end_stream() = 0;
  // True once the client has closed or reset the connection. A client that half-closes right
  // after sending its request (shutdown(SHUT_WR)) is still answered.
  virtual bool client_gone() const = 0;
  // The status the metrics record for this request when it differs from what was sent (499:
  // the client left; 408: a stream cut by the request timeout).
  virtual void set_outcome(int status) = 0;
};

// Case-insensitive ASCII comparison (header names, auth schemes).
bool iequals(std::string_view a, std::string_view b);

}  // namespace ridge::server::http
