#include "server/http/message.h"

#include <fmt/format.h>

#include <optional>

namespace ridge::server::http {

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
  }
}

// Header text from handlers never carries a line break into the response head.
std::string_view one_line(std::string_view s) {
  const size_t end = s.find_first_of("\r\n");
  return end == std::string_view::npos ? s : s.substr(0, end);
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return {};
}

std::string response_head(int status, std::string_view content_type, const Headers& headers,
                          std::optional<size_t> content_length, bool keep_alive) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\n", status, reason(status),
                                one_line(content_type));
  for (const auto& [k, v] : headers) out += fmt::format("{}: {}\r\n", one_line(k), one_line(v));
  if (content_length) {
    out += fmt::format("Content-Length: {}\r\n", *content_length);
  } else {
    out += "Transfer-Encoding: chunked\r\n";
  }
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return out;
}

}  // namespace ridge::server::http
