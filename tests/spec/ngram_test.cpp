#include "spec/ngram.h"

#include <gtest/gtest.h>

#include <vector>

namespace ridge::spec {
namespace {

std::vector<int32_t> draft(const std::vector<int32_t>& h, int max_ngram = 3, int max_draft = 8) {
  NgramOptions o;
  o.max_ngram = max_ngram;
  o.max_draft = max_draft;
  return ngram_draft(h, o);
}

TEST(NgramDraft, ContinuesTheMostRecentEarlierOccurrenceOfTheLongestSuffix) {
  // "1 2 3" occurred at 0 (followed by 9 9) and at 5 (followed by 4 5): the most recent wins, and
  // the copy goes on past the end with its own tokens.
  EXPECT_EQ(draft({1, 2, 3, 9, 9, 1, 2, 3, 4, 5, 7, 1, 2, 3}), (std::vector<int32_t>{4, 5, 7, 1, 2, 3, 4, 5}));
  // Only "3" recurs: a 1-gram match.
  EXPECT_EQ(draft({5, 3, 8, 6, 3}), (std::vector<int32_t>{8, 6, 3, 8, 6, 3, 8, 6}));
  // A longer match beats a more recent shorter one: "7 8" at 0 (then 1) over "8" at 3 (then 2).
  EXPECT_EQ(draft({7, 8, 1, 8, 2, 0, 7, 8}), (std::vector<int32_t>{1, 8, 2, 0, 7, 8, 1, 8}));
}

TEST(NgramDraft, LimitsAndNoMatch) {
  EXPECT_TRUE(draft({}).empty());
  EXPECT_TRUE(draft({4}).empty());
  EXPECT_TRUE(draft({1, 2, 3, 4}).empty());  // nothing recurs
  EXPECT_EQ(draft({1, 2, 3, 4, 5, 1}, 3, 2), (std::vector<int32_t>{2, 3}));  // max_draft
  // A loop of one token: itself, max_draft times.
  EXPECT_EQ(draft({6, 6, 6}, 3, 5), (std::vector<int32_t>{6, 6, 6, 6, 6}));
  EXPECT_EQ(draft({4, 1, 2, 1, 2}, 2, 5), (std::vector<int32_t>{1, 2, 1, 2, 1}));
  NgramOptions o;
  o.min_ngram = 2;
  EXPECT_TRUE(ngram_draft(std::vector<int32_t>{5, 3, 8, 6, 3}, o).empty());  // only a 1-gram recurs
}

TEST(SpecStats, Ratios) {
  SpecStats s;
  EXPECT_EQ(s.acceptance(), 0.0);
  s.n_steps = 4;
  s.n_drafted = 20;
  s.n_accepted = 8;
  EXPECT_DOUBLE_EQ(s.acceptance(), 0.4);
  EXPECT_DOUBLE_EQ(s.tokens_per_step(), 3.0);
}

}  // namespace
}  // namespace ridge::spec

namespace ridge::spec {
namespace {

TEST(PredictionDraft, ContinuesThePredictionWhereTheTextIs) {
  NgramOptions o;
  o.max_draft = 3;
  const std::vector<int32_t> pred{10, 11, 12, 13, 10, 11, 14, 15};
  // "... 10 11" occurs twice: the first at or after the hint.
  PredictionDraft d = prediction_draft(std::vector<int32_t>{1, 10, 11}, pred, o, 0);
  EXPECT_EQ(d.tokens, (std::vector<int32_t>{12, 13, 10}));
  EXPECT_EQ(d.from, 2);
  d = prediction_draft(std::vector<int32_t>{1, 10, 11}, pred, o, 5);
  EXPECT_EQ(d.tokens, (std::vector<int32_t>{14, 15}));  // to the prediction's end
  EXPECT_EQ(d.from, 6);
  // Past every occurrence: the last one.
  d = prediction_draft(std::vector<int32_t>{10, 11}, pred, o, 7);
  EXPECT_EQ(d.from, 6);
  // The text went off the prediction (an edit): the longest suffix that is in it re-syncs.
  d = prediction_draft(std::vector<int32_t>{10, 11, 12, 99, 13}, pred, o, 3);
  EXPECT_EQ(d.tokens, (std::vector<int32_t>{10, 11, 14}));
  EXPECT_TRUE(prediction_draft(std::vector<int32_t>{99}, pred, o, 0).tokens.empty());
  EXPECT_TRUE(prediction_draft(std::vector<int32_t>{15}, pred, o, 0).tokens.empty());  // at its end
  EXPECT_TRUE(prediction_draft(std::vector<int32_t>{1}, std::vector<int32_t>{}, o, 0).tokens.empty());
}

}  // namespace
}  // namespace ridge::spec
