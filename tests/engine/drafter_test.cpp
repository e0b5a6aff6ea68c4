// The engine's draft model (Drafter) against an exact oracle: a drafter that has followed
// sequences through growing, cut back and diverging texts proposes exactly what a fresh drafter
// proposes for the same texts (the fake runner's logits depend on the whole context it reads
// from the cache, so a stale or misplaced cached token changes them, and a slot holding the
// wrong position fails the run); long texts catch up over several calls within the token
// budget; a full pool drafts nothing for the sequences that do not fit, and released sequences
// give every block back.
#include <gtest/gtest.h>

#include <random>

#include "engine/drafter.h"
#include "fake_runner.h"

namespace ridge::engine {
namespace {

using testing::FakeRunner;

constexpr int32_t kVocab = 7;

std::vector<int32_t> fresh_proposal(const std::vector<int32_t>& text, int32_t k) {
  Drafter fresh(std::make_unique<FakeRunner>(256, 4, kVocab), 1024);
  const Drafter::Work w{1, text, k};
  auto out = fresh.propose(std::span<const Drafter::Work>(&w, 1));
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? (*out)[0] : std::vector<int32_t>{};
}

TEST(Drafter, ProposesWhatAFreshDrafterProposesAsTextsGrowAndDiverge) {
  std::mt19937 rng(4);
  Drafter d(std::make_unique<FakeRunner>(256, 4, kVocab), 1024);
  std::vector<std::vector<int32_t>> texts(5);
  for (auto& t : texts) {
    for (uint32_t i = 0, n = 1 + rng() % 12; i < n; ++i) t.push_back(static_cast<int32_t>(rng() % kVocab));
  }
  int64_t drafted = 0;
  for (int round = 0; round < 60; ++round) {
    std::vector<Drafter::Work> work;
    for (size_t s = 0; s < texts.size(); ++s) {
      if (rng() % 4 == 0) continue;  // not drafting this step
      work.push_back({static_cast<RequestId>(s + 1), texts[s], static_cast<int32_t>(1 + rng() % 5)});
    }
    auto got = d.propose(work);
    ASSERT_TRUE(got.ok()) << got.status().message();
    for (size_t i = 0; i < work.size(); ++i) {
      const std::vector<int32_t> text(work[i].text.begin(), work[i].text.end());
      EXPECT_EQ((*got)[i], fresh_proposal(text, work[i].k)) << "round " << round << " sequence " << work[i].id;
      drafted += static_cast<int64_t>((*got)[i].size());
    }
    // Each text then takes some of its draft (as verification does) and one token of its own,
    // or is cut back (a chat's rewritten turn).
    for (size_t i = 0; i < work.size(); ++i) {
      std::vector<int32_t>& t = texts[static_cast<size_t>(work[i].id - 1)];
      const std::vector<int32_t>& draft = (*got)[i];
      const size_t kept = rng() % (draft.size() + 1);
      t.insert(t.end(), draft.begin(), draft.begin() + static_cast<std::ptrdiff_t>(kept));
      t.push_back(static_cast<int32_t>(rng() % kVocab));
      if (rng() % 10 == 0 && t.size() > 4) t.resize(t.size() / 2);
    }
  }
  EXPECT_GT(drafted, 300);
  for (size_t s = 0; s < texts.size(); ++s) d.release(static_cast<RequestId>(s + 1));
  EXPECT_EQ(d.n_blocks_used(), 0);
}

TEST(Drafter, ALongTextCatchesUpWithinTheTokenBudget) {
  Drafter d(std::make_unique<FakeRunner>(256, 4, kVocab), 24);
  std::vector<int32_t> text;
  for (int i = 0; i < 100; ++i) text.push_back((i * 5 + 2) % kVocab);
  const Drafter::Work w{9, text, 4};
  int calls = 0;
  std::vector<int32_t> draft;
  while (draft.empty() && calls < 10) {
    auto got = d.propose(std::span<const Drafter::Work>(&w, 1));
    ASSERT_TRUE(got.ok()) << got.status().message();
    draft = (*got)[0];
    ++calls;
  }
  EXPECT_EQ(calls, 5);  // 24 + 24 + 24 + 24 + 4 tokens
  EXPECT_EQ(draft, fresh_proposal(text, 4));
}

TEST(Drafter, AFullPoolDraftsNothingForWhatDoesNotFit) {
  Drafter d(std::make_unique<FakeRunner>(6, 4, kVocab), 1024);  // 24 slots
  const std::vector<int32_t> a(14, 1), b(14, 2);
  const Drafter::Work work[] = {{1, a, 3}, {2, b, 3}};
  auto got = d.propose(work);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ((*got)[0], fresh_proposal(a, 3));
  EXPECT_TRUE((*got)[1].empty());  // 16 + 16 slots do not fit in 24
  d.release(1);
  auto again = d.propose(std::span<const Drafter::Work>(&work[1], 1));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0], fresh_proposal(b, 3));
  d.release(2);
  d.release(3);  // never drafted: nothing to do
  EXPECT_EQ(d.n_blocks_used(), 0);
}

}  // namespace
}  // namespace ridge::engine
