#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include <utility>

namespace ridge::server {

nlohmann::json ApiError::to_json() const {
  nlohmann::json e = {{"message", message}, {"type", type}};
  e["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  e["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  return {{"error", std::move(e)}};
}

namespace {
ApiError make(int status, std::string type, std::string message, std::string code = "") {
  ApiError e;
  e.status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}
}  // namespace

ApiError invalid_param(std::string param, std::string message) {
  ApiError e = make(400, "invalid_request_error", std::move(message));
  e.param = std::move(param);
  return e;
}
ApiError unauthorized(std::string message) {
  return make(401, "authentication_error", std::move(message), "invalid_api_key");
}
ApiError not_found(std::string message, std::string code) {
  return make(404, "invalid_request_error", std::move(message), std::move(code));
}
ApiError payload_too_large(std::string message) {
  return make(413, "invalid_request_error", std::move(message), "payload_too_large");
}
ApiError too_many_requests(std::string message) {
  return make(429, "rate_limit_error", std::move(message), "queue_full");
}
ApiError unavailable(std::string message) {
  return make(503, "server_error", std::move(message), "unavailable");
}
ApiError server_error(std::string message) { return make(500, "server_error", std::move(message)); }

ApiError http_error(int status, std::string message) {
  switch (status) {
    case 404: return not_found(std::move(message), "not_found");
    case 405: return make(405, "invalid_request_error", std::move(message), "method_not_allowed");
    case 408: return make(408, "timeout_error", std::move(message), "request_timeout");
    case 413: return payload_too_large(std::move(message));
    case 415: return make(415, "invalid_request_error", std::move(message), "unsupported_media_type");
    case 431: return make(431, "invalid_request_error", std::move(message), "header_too_large");
    case 503: return unavailable(std::move(message));
    default:
      return make(status, status >= 500 ? "server_error" : "invalid_request_error",
                  std::move(message));
  }
}

}  // namespace ridge::server
