#include "sampling/stop_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace ridge::sampling {
namespace {

// Feeds pieces, returns everything emitted (including the final flush if not stopped).
std::string run(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& piece : pieces) {
    auto o = m.push(piece);
    out += o.text;
    if (o.stopped) return out;
  }
  return out + m.flush();
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  auto o = m.push("hello");
  EXPECT_EQ(o.text, "hello");
  EXPECT_FALSE(o.stopped);
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, StopInsideOnePieceCutsBeforeIt) {
  StopMatcher m({"END"});
  auto o = m.push("abcENDxyz");
  EXPECT_EQ(o.text, "abc");
  EXPECT_TRUE(o.stopped);
  EXPECT_EQ(o.stop_index, 0);
  // Later pieces produce nothing.
  auto later = m.push("more");
  EXPECT_TRUE(later.stopped);
  EXPECT_EQ(later.text, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, StopAcrossPiecesIsHeldBackThenDropped) {
  StopMatcher m({"</s>"});
  auto a = m.push("Hello <");
  EXPECT_EQ(a.text, "Hello ");  // "<" could start the stop string
  EXPECT_EQ(m.n_held(), 1u);
  auto b = m.push("/");
  EXPECT_EQ(b.text, "");
  auto c = m.push("s> tail");
  EXPECT_EQ(c.text, "");
  EXPECT_TRUE(c.stopped);
}

TEST(StopMatcher, FalseStartIsReleased) {
  StopMatcher m({"</s>"});
  EXPECT_EQ(m.push("a </").text, "a ");
  auto o = m.push("b>");
  EXPECT_EQ(o.text, "</b>");
  EXPECT_FALSE(o.stopped);
  EXPECT_EQ(m.n_held(), 0u);
}

TEST(StopMatcher, FlushReleasesHeldTextAtEnd) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("xyST").text, "xy");
  EXPECT_EQ(m.flush(), "ST");
}

TEST(StopMatcher, HeldTailIsLongestPossiblePrefix) {
  // "aab" ends in "aa" and "a"; with stop "aaa" the longest candidate prefix "aa" is held.
  StopMatcher m({"aaa"});
  EXPECT_EQ(m.push("baa").text, "b");
  EXPECT_EQ(m.n_held(), 2u);
  auto o = m.push("a");
  EXPECT_TRUE(o.stopped);
  EXPECT_EQ(o.text, "");
}

TEST(StopMatcher, EarliestStopWinsAmongSeveral) {
  StopMatcher m({"world", "lo w"});
  auto o = m.push("hello world");
  EXPECT_TRUE(o.stopped);
  EXPECT_EQ(o.stop_index, 1);
  EXPECT_EQ(o.text, "hel");
}

TEST(StopMatcher, EveryPieceSplitGivesTheSameText) {
  // Independent expectation: the text before the first occurrence of the stop string.
  const std::string text = "The cat sat.\nUser: hi\nmore";
  const std::string want = "The cat sat.";
  for (size_t cut1 = 0; cut1 <= text.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= text.size(); ++cut2) {
      StopMatcher m({"\nUser:", "zzz"});
      const std::string got = run(m, {text.substr(0, cut1), text.substr(cut1, cut2 - cut1),
                                      text.substr(cut2)});
      ASSERT_EQ(got, want) << cut1 << " " << cut2;
      ASSERT_TRUE(m.stopped());
    }
  }
}

TEST(StopMatcher, MultiByteUtf8IsNotSplit) {
  // Stop "éx" (c3 a9 78): a held "é" is two whole bytes; released whole when "y" follows.
  StopMatcher m({"\xc3\xa9x"});
  EXPECT_EQ(m.push("caf\xc3\xa9").text, "caf");
  EXPECT_EQ(m.push("y").text, "\xc3\xa9y");
}

}  // namespace
}  // namespace ridge::sampling

namespace ridge::sampling {
namespace {

// Reference by brute force: after each piece, search the whole text so far; the first piece
// after which some stop string occurs ends the output at the earliest occurrence.
std::string reference(const std::vector<std::string>& pieces, const std::vector<std::string>& stops,
                      bool& stopped) {
  std::string text;
  stopped = false;
  for (const auto& piece : pieces) {
    text += piece;
    size_t first = std::string::npos;
    for (const auto& s : stops) first = std::min(first, text.find(s));
    if (first != std::string::npos) {
      stopped = true;
      return text.substr(0, first);
    }
  }
  return text;
}

TEST(StopMatcher, RandomTextsMatchBruteForce) {
  std::mt19937 rng(11);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops(static_cast<size_t>(pick(3)));
    for (auto& s : stops) {
      for (int i = pick(4) + 1; i > 0; --i) s += static_cast<char>('a' + pick(3));
    }
    std::vector<std::string> pieces(static_cast<size_t>(pick(8) + 1));
    for (auto& p : pieces) {
      for (int i = pick(4); i > 0; --i) p += static_cast<char>('a' + pick(3));
    }
    bool want_stopped = false;
    const std::string want = reference(pieces, stops, want_stopped);
    StopMatcher m(stops);
    std::string got;
    size_t max_stop = 0;
    for (const auto& s : stops) max_stop = std::max(max_stop, s.size());
    for (const auto& p : pieces) {
      auto o = m.push(p);
      got += o.text;
      ASSERT_LE(m.n_held(), max_stop == 0 ? 0 : max_stop - 1);
      if (o.stopped) break;
    }
    got += m.flush();
    ASSERT_EQ(got, want) << "trial " << trial;
    ASSERT_EQ(m.stopped(), want_stopped) << "trial " << trial;
  }
}

}  // namespace
}  // namespace ridge::sampling
