// A raw TCP client for the hostile-client tests: it sends exactly the bytes it is given (broken
// framing, trickled headers, half-closes) and reads whatever comes back, with deadlines.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ridge::server::testing {

struct RawResponse {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;  // de-chunked
};

class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  bool send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  // Waits for bytes; appends them to buf_. False on timeout; sets closed_ on EOF or error.
  bool read_more(double timeout_s) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout_s * 1000)) <= 0) return false;
    char tmp[65536];
    const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  // True when the server closes the connection within timeout_s (whatever it sent first).
  bool closed_within(double timeout_s) {
    const auto end = deadline(timeout_s);
    while (!closed_ && left(end) > 0) read_more(left(end));
    return closed_;
  }

  // One response: its head, then a Content-Length or chunked body.
  std::optional<RawResponse> read_response(double timeout_s) {
    const auto end = deadline(timeout_s);
    size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (closed_ || left(end) <= 0) return std::nullopt;
      read_more(left(end));
    }
    RawResponse r;
    r.head = buf_.substr(0, head_end);
    buf_.erase(0, head_end + 4);
    if (r.head.size() < 12) return std::nullopt;
    r.status = std::stoi(r.head.substr(9, 3));
    const std::string lower = to_lower(r.head);
    if (const size_t cl = lower.find("content-length: "); cl != std::string::npos) {
      const size_t n = std::stoul(lower.substr(cl + 16));
      while (buf_.size() < n) {
        if (closed_ || left(end) <= 0) return std::nullopt;
        read_more(left(end));
      }
      r.body = buf_.substr(0, n);
      buf_.erase(0, n);
    } else if (lower.find("transfer-encoding: chunked") != std::string::npos) {
      for (;;) {
        size_t line_end;
        while ((line_end = buf_.find("\r\n")) == std::string::npos) {
          if (closed_ || left(end) <= 0) return std::nullopt;
          read_more(left(end));
        }
        const size_t n = std::stoul(buf_.substr(0, line_end), nullptr, 16);
        while (buf_.size() < line_end + 2 + n + 2) {
          if (closed_ || left(end) <= 0) return std::nullopt;
          read_more(left(end));
        }
        r.body += buf_.substr(line_end + 2, n);
        buf_.erase(0, line_end + 2 + n + 2);
        if (n == 0) break;
      }
    }
    return r;
  }

  const std::string& buffered() const { return buf_; }

 private:
  using Clock = std::chrono::steady_clock;
  static Clock::time_point deadline(double s) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  static double left(Clock::time_point end) {
    return std::chrono::duration<double>(end - Clock::now()).count();
  }
  static std::string to_lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  int fd_ = -1;
  bool closed_ = false;
  std::string buf_;
};

// A POST with a Content-Length body and the given extra header lines ("Name: value\r\n" each).
inline std::string raw_post(std::string_view path, std::string_view body,
                            std::string_view extra_headers = "") {
  std::string r = "POST " + std::string(path) + " HTTP/1.1\r\nHost: x\r\n";
  r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  r += extra_headers;
  r += "\r\n";
  r += body;
  return r;
}

}  // namespace ridge::server::testing
