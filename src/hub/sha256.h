// SHA-256 of a stream (OpenSSL's libcrypto): how a download is checked against the hash the hub
// reports for the file.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace ridge::hub {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  std::string hex();  // lower-case hex digest; the object is spent afterwards

 private:
  void* ctx_;  // EVP_MD_CTX
};

// The hex digest of the file at `path`.
Result<std::string> sha256_file(const std::string& path);

}  // namespace ridge::hub
