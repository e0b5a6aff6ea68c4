// The MTP head's reference for the engine and session tests: the trunk over a whole text in one
// step (which writes the head's K/V of every position), then the head teacher-forced over it
// (each token paired with the trunk's hidden state at the position before; model/mtp.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "base/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace ridge::engine::testing {

struct TeacherForced {
  std::vector<float> hidden;      // [n, n_embd] the trunk's final-norm hidden states
  std::vector<int32_t> head_top;  // [n] the head's argmax at each position
};

inline TeacherForced teacher_forced(const model::Model& m, const std::vector<int32_t>& text) {
  const auto n = static_cast<int32_t>(text.size());
  const auto d = static_cast<size_t>(m.config().n_embd), v = static_cast<size_t>(m.config().n_vocab);
  constexpr int32_t kBlocks = 16, kBs = 16;
  EXPECT_LE(n, kBlocks * kBs);
  auto kv = kv::KvCache::create(m.kv_config(kBlocks, kv::KvType::kF16, kBs, 1, 0, /*mtp=*/true));
  EXPECT_TRUE(kv.ok());
  model::WorkspaceLimits lim;
  lim.max_tokens = lim.max_outputs = lim.max_context = kBlocks * kBs;
  lim.block_size = kBs;
  lim.mtp = true;
  auto ws = model::Workspace::create(m.config(), lim);
  EXPECT_TRUE(ws.ok());
  ThreadPool pool(1);
  backend::CpuBackend cpu(m.kernels(), pool);
  model::Batch b;
  std::vector<int32_t> table(kBlocks);
  for (int32_t i = 0; i < kBlocks; ++i) table[static_cast<size_t>(i)] = i;
  b.add_seq(table, n, 0);
  for (int32_t p = 0; p < n; ++p) b.add_token(text[static_cast<size_t>(p)], p, 0, false, kBs);
  EXPECT_TRUE(m.forward(b, *kv, *ws, cpu).ok());
  TeacherForced t;
  t.hidden.assign(ws->mtp_hidden.begin(), ws->mtp_hidden.begin() + static_cast<long>(n * d));
  std::vector<float> h_prev(n * d, 0.0f);
  std::copy(t.hidden.begin(), t.hidden.end() - static_cast<long>(d), h_prev.begin() + static_cast<long>(d));
  for (auto& l : b.need_logits) l = 1;
  auto logits = m.forward_mtp(b, h_prev, *kv, *ws, cpu);
  EXPECT_TRUE(logits.ok()) << logits.status().message();
  for (int32_t p = 0; p < n && logits.ok(); ++p) {
    const std::span<const float> row = logits->subspan(p * v, v);
    t.head_top.push_back(static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin()));
  }
  return t;
}

}  // namespace ridge::engine::testing
