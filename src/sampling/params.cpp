#include "sampling/params.h"

#include <cmath>
#include <random>

namespace ridge::sampling {

namespace {

// Every float field must be a number; ranges are checked per field below.
Status check_finite(const char* name, float v) {
  if (!std::isfinite(v)) return usage_error("sampling: {} = {} is not a finite number", name, v);
  return ok_status();
}

}  // namespace

Status SamplingParams::validate(int32_t n_vocab) const {
  if (n_vocab <= 0) return usage_error("sampling: vocabulary size {} is not positive", n_vocab);
  RIDGE_RETURN_IF_ERROR(check_finite("temperature", temperature));
  if (temperature < 0.0f) return usage_error("sampling: temperature = {} is negative", temperature);
  if (top_k < 0) return usage_error("sampling: top_k = {} is negative (0 disables it)", top_k);
  RIDGE_RETURN_IF_ERROR(check_finite("top_p", top_p));
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return usage_error("sampling: top_p = {} is outside (0, 1]", top_p);
  }
  RIDGE_RETURN_IF_ERROR(check_finite("min_p", min_p));
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return usage_error("sampling: min_p = {} is outside [0, 1]", min_p);
  }
  RIDGE_RETURN_IF_ERROR(check_finite("repetition_penalty", repetition_penalty));
  if (repetition_penalty <= 0.0f) {
    return usage_error("sampling: repetition_penalty = {} is not positive (1 disables it)",
                       repetition_penalty);
  }
  RIDGE_RETURN_IF_ERROR(check_finite("frequency_penalty", frequency_penalty));
  RIDGE_RETURN_IF_ERROR(check_finite("presence_penalty", presence_penalty));
  if (penalty_last_n < -1) {
    return usage_error("sampling: penalty_last_n = {} is below -1 (-1 means the whole history)",
                       penalty_last_n);
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0 || token >= n_vocab) {
      return usage_error("sampling: logit_bias token id {} is outside [0, {})", token, n_vocab);
    }
    if (std::isnan(bias) || bias == INFINITY) {
      return usage_error("sampling: logit_bias of token {} is {} (must be a number or -inf)",
                         token, bias);
    }
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) return usage_error("sampling: stop string {} is empty", i);
  }
  if (max_tokens < -1) {
    return usage_error("sampling: max_tokens = {} is below -1 (-1 means no limit)", max_tokens);
  }
  return ok_status();
}

uint64_t random_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace ridge::sampling
