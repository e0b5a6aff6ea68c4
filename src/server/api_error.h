// OpenAI-style error objects: every 4xx/5xx answer of the server is
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// with `param` naming the offending request field (null when none).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace ridge::server {

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // "" -> null
  std::string code;   // "" -> null

  nlohmann::json to_json() const;
};

// 400 invalid_request_error naming `param`.
ApiError invalid_param(std::string param, std::string message);
ApiError unauthorized(std::string message);              // 401
ApiError not_found(std::string message, std::string code = "");  // 404
ApiError payload_too_large(std::string message);         // 413
ApiError too_many_requests(std::string message);         // 429
ApiError unavailable(std::string message);               // 503
ApiError server_error(std::string message);              // 500
// The error for a status the HTTP layer produces itself (404, 405, 408, 413, 415, 431, 503 ...).
ApiError http_error(int status, std::string message);

}  // namespace ridge::server
