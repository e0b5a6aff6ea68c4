#include "sampling/params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace ridge::sampling {
namespace {

constexpr int32_t kVocab = 100;

// Expects `p` to be rejected as a usage error whose message names `field`.
void expect_rejected(const SamplingParams& p, const std::string& field) {
  Status s = p.validate(kVocab);
  ASSERT_FALSE(s.ok()) << field;
  EXPECT_TRUE(s.is_usage()) << s.message();
  EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
}

SamplingParams with(const std::function<void(SamplingParams&)>& edit) {
  SamplingParams p;
  edit(p);
  return p;
}

TEST(SamplingParams, DefaultsAreValidAndMatchLlamaCpp) {
  SamplingParams p;
  EXPECT_TRUE(p.validate(kVocab).ok());
  EXPECT_FLOAT_EQ(p.temperature, 0.8f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.0f);
  EXPECT_EQ(p.penalty_last_n, 64);
  EXPECT_FALSE(p.greedy());
  EXPECT_FALSE(p.has_penalties());
}

TEST(SamplingParams, BoundaryValuesAreAccepted) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(with([](auto& p) { p.temperature = 0.0f; }).validate(kVocab).ok());
  EXPECT_TRUE(with([](auto& p) { p.top_k = 0; }).validate(kVocab).ok());
  EXPECT_TRUE(with([](auto& p) { p.top_p = 1.0f; }).validate(kVocab).ok());
  EXPECT_TRUE(with([](auto& p) { p.min_p = 0.0f; }).validate(kVocab).ok());
  EXPECT_TRUE(with([](auto& p) { p.min_p = 1.0f; }).validate(kVocab).ok());
  EXPECT_TRUE(with([](auto& p) { p.penalty_last_n = -1; }).validate(kVocab).ok());
  EXPECT_TRUE(with([](auto& p) { p.max_tokens = -1; }).validate(kVocab).ok());
  EXPECT_TRUE(with([](auto& p) { p.frequency_penalty = -2.0f; }).validate(kVocab).ok());
  EXPECT_TRUE(with([&](auto& p) { p.logit_bias = {{0, -inf}, {99, 5.0f}}; }).validate(kVocab).ok());
  EXPECT_TRUE(with([](auto& p) { p.greedy(); p.temperature = 0; }).greedy());
}

TEST(SamplingParams, InvalidValuesAreRejectedNamingTheField) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  expect_rejected(with([](auto& p) { p.temperature = -0.1f; }), "temperature");
  expect_rejected(with([&](auto& p) { p.temperature = nan; }), "temperature");
  expect_rejected(with([&](auto& p) { p.temperature = inf; }), "temperature");
  expect_rejected(with([](auto& p) { p.top_k = -1; }), "top_k");
  expect_rejected(with([](auto& p) { p.top_p = 0.0f; }), "top_p");
  expect_rejected(with([](auto& p) { p.top_p = 1.5f; }), "top_p");
  expect_rejected(with([&](auto& p) { p.top_p = nan; }), "top_p");
  expect_rejected(with([](auto& p) { p.min_p = -0.01f; }), "min_p");
  expect_rejected(with([](auto& p) { p.min_p = 1.01f; }), "min_p");
  expect_rejected(with([&](auto& p) { p.min_p = nan; }), "min_p");
  expect_rejected(with([](auto& p) { p.repetition_penalty = 0.0f; }), "repetition_penalty");
  expect_rejected(with([](auto& p) { p.repetition_penalty = -1.0f; }), "repetition_penalty");
  expect_rejected(with([&](auto& p) { p.frequency_penalty = nan; }), "frequency_penalty");
  expect_rejected(with([&](auto& p) { p.presence_penalty = -inf; }), "presence_penalty");
  expect_rejected(with([](auto& p) { p.penalty_last_n = -2; }), "penalty_last_n");
  expect_rejected(with([](auto& p) { p.logit_bias = {{kVocab, 1.0f}}; }), "logit_bias");
  expect_rejected(with([](auto& p) { p.logit_bias = {{-1, 1.0f}}; }), "logit_bias");
  expect_rejected(with([&](auto& p) { p.logit_bias = {{3, nan}}; }), "logit_bias");
  expect_rejected(with([&](auto& p) { p.logit_bias = {{3, inf}}; }), "logit_bias");
  expect_rejected(with([](auto& p) { p.stop = {"ok", ""}; }), "stop");
  expect_rejected(with([](auto& p) { p.max_tokens = -2; }), "max_tokens");
}

TEST(SamplingParams, RejectsEmptyVocabulary) {
  SamplingParams p;
  EXPECT_FALSE(p.validate(0).ok());
}

TEST(SamplingParams, RandomSeedsDiffer) {
  // Two 64-bit draws from the entropy source colliding is practically impossible.
  EXPECT_NE(random_seed(), random_seed());
}

}  // namespace
}  // namespace ridge::sampling
