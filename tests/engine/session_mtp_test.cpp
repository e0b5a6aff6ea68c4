// Session::draft_mtp (the MTP head in a Session, `ridge run --spec mtp`): after prompts in
// chunks, verification evals and truncations into their rows, every first draft is the head's
// teacher-forced choice at its position over the finished text (model/mtp.cpp), bit for bit:
// the hidden state the session pairs with each newest token is the trunk's at the position
// before, and the head's KV of every earlier position holds its true pair. The text follows
// the drafts part of the way (two of three kept) so that truncations land inside an eval's rows.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/session.h"
#include "mtp_teacher_forced.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace session_mtp_test {

int32_t top(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

TEST(SessionMtp, EveryFirstDraftIsTheTeacherForcedHeads) {
  const model::Model& m = *testing::tiny_model("tiny-qwen35-mtp", "f32").model;
  SessionOptions o;
  o.n_ctx = 256;
  o.max_batch = 16;  // the prompt in three steps
  o.max_outputs = 4;
  o.keep_row_states = true;
  o.mtp = true;
  auto s = Session::create(m, o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<int32_t> text;
  for (int32_t i = 0; i < 40; ++i) text.push_back((7 + 29 * i) % 500);
  auto logits = s->eval(text);
  ASSERT_TRUE(logits.ok());
  const auto v = static_cast<size_t>(m.config().n_vocab);
  text.push_back(top(*logits));
  std::vector<std::pair<size_t, int32_t>> first;  // (position, first draft)
  while (text.size() < 150) {
    const auto base = static_cast<size_t>(s->n_past());
    auto drafts = s->draft_mtp(text, 3);
    ASSERT_TRUE(drafts.ok()) << drafts.status().message();
    ASSERT_EQ(drafts->size(), 3u);
    first.emplace_back(base, (*drafts)[0]);
    // Verify the newest token and three drafts; keep two of them, then follow the trunk.
    std::vector<int32_t> step = {text.back()};
    step.insert(step.end(), drafts->begin(), drafts->end());
    auto rows = s->eval(step, /*all_logits=*/true);
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    ASSERT_EQ(s->truncate(static_cast<int64_t>(base) + 3), static_cast<int64_t>(base) + 3);
    text.push_back((*drafts)[0]);
    text.push_back((*drafts)[1]);
    text.push_back(top(rows->subspan(2 * v, v)));  // the trunk's token after the kept drafts
  }
  const std::vector<int32_t> want = testing::teacher_forced(m, text).head_top;
  ASSERT_GE(first.size(), 20u);
  for (const auto& [pos, draft] : first) EXPECT_EQ(draft, want[pos]) << "position " << pos;
}

}  // namespace session_mtp_test
}  // namespace ridge::engine
