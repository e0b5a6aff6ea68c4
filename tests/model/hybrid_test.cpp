// Qwen3.5's hybrid layers in the engine's terms: the recurrent state per sequence (slots, resets,
// refusals of steps that do not continue it), batch invariance of the linear layers, and load
// refusals. Agreement with llama.cpp is synthetic_peer_test's.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/session.h"
#include "offline/synth.h"
#include "test_util.h"

namespace ridge::model {
namespace {

// The preset's f32 model (seed 5).
const Model& load_tiny(const std::string& preset) { return testing::cached_tiny(preset, 5); }

std::vector<int32_t> tokens_of(int64_t n, int32_t salt) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back(static_cast<int32_t>((salt + 131 * i) % 500));
  return t;
}

// A workspace for steps of up to 64 tokens of a few sequences, on 2 threads.
WorkspaceLimits two_sequence_limits(int64_t block_size) {
  WorkspaceLimits lim;
  lim.max_tokens = 64;
  lim.max_outputs = 8;
  lim.max_context = 64;
  lim.n_threads = 2;
  lim.block_size = block_size;
  return lim;
}

TEST(HybridConfig, LayerPatternAndCacheShape) {
  const Model& m = load_tiny("tiny-qwen35");
  const ModelConfig& c = m.config();
  EXPECT_EQ(c.n_recurrent_layers(), 6);
  EXPECT_EQ(c.n_kv_layers(), 2);
  EXPECT_FALSE(c.is_recurrent_layer(3));
  EXPECT_FALSE(c.is_recurrent_layer(7));
  EXPECT_EQ(c.kv_layer(7), 1);
  EXPECT_EQ(c.recurrent_layer(6), 5);
  const kv::KvCacheConfig kc = m.kv_config(8, kv::KvType::kF16, 16, 3);
  EXPECT_EQ(kc.n_layer, 2);
  EXPECT_EQ(kc.state.n_layer, 6);
  EXPECT_EQ(kc.state.n_slots, 3);
  // conv: 3 rows of q | k | v (2 x 2 x 16 + 4 x 16); delta rule: 4 heads of 16 x 16.
  EXPECT_EQ(kc.state.floats_per_layer, 3 * 128 + 4 * 16 * 16);
}

// Prefill in one step, in chunks of 5, and token by token, on 2 threads and on 1: the same
// logits, bit for bit.
TEST(HybridSession, ChunkingAndThreadsDoNotChangeLogits) {
  const Model& m = load_tiny("tiny-qwen35");
  const std::vector<int32_t> toks = tokens_of(37, 11);
  std::vector<std::vector<float>> runs;
  for (auto [batch, threads] : {std::pair{64, 2}, std::pair{5, 2}, std::pair{1, 2}, std::pair{64, 1}, std::pair{5, 1}}) {
    engine::SessionOptions o;
    o.n_ctx = 64;
    o.max_batch = batch;
    o.n_threads = threads;
    auto s = engine::Session::create(m, o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    std::span<const float> last;
    for (size_t i = 0; i < toks.size(); i += 7) {  // several evals: the state carries across
      const size_t n = std::min<size_t>(7, toks.size() - i);
      auto r = s->eval(std::span(toks).subspan(i, n));
      ASSERT_TRUE(r.ok()) << r.status().message();
      last = *r;
    }
    runs.emplace_back(last.begin(), last.end());
  }
  for (size_t i = 1; i < runs.size(); ++i) EXPECT_EQ(runs[0], runs[i]) << "run " << i;
}

// A recurrent state cannot roll back: truncate keeps nothing, and evaluating from 0 again gives
// what a fresh session gives; reset() likewise.
TEST(HybridSession, TruncateStartsOverAndMatchesAFreshRun) {
  const Model& m = load_tiny("tiny-qwen35");
  const std::vector<int32_t> a = tokens_of(20, 3), b = tokens_of(9, 77);
  engine::SessionOptions o;
  o.n_ctx = 64;
  auto fresh = engine::Session::create(m, o);
  ASSERT_TRUE(fresh.ok());
  auto want = fresh->eval(b);
  ASSERT_TRUE(want.ok());
  const std::vector<float> expected(want->begin(), want->end());

  auto s = engine::Session::create(m, o);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->eval(a).ok());
  EXPECT_EQ(s->truncate(12), 0);
  EXPECT_EQ(s->n_past(), 0);
  auto got = s->eval(b);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::vector<float>(got->begin(), got->end()), expected);
  EXPECT_EQ(s->truncate(s->n_past()), s->n_past());  // keeping everything is fine
}

// The checkpoint: after a prompt (an eval of several tokens) and a few single-token evals, a
// truncation back to anywhere past the prompt resumes from the prompt's end, and what follows gives
// a fresh run's logits; a truncation into the prompt starts over (and forgets the checkpoint).
TEST(HybridSession, TruncateResumesFromTheLastPromptsEnd) {
  const Model& m = load_tiny("tiny-qwen35");
  const std::vector<int32_t> prompt = tokens_of(20, 3), reply = tokens_of(4, 40), next = tokens_of(6, 90);
  engine::SessionOptions o;
  o.n_ctx = 64;
  // A fresh run of prompt + reply[0..1] + next.
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), reply.begin(), reply.begin() + 2);
  all.insert(all.end(), next.begin(), next.end());
  auto fresh = engine::Session::create(m, o);
  ASSERT_TRUE(fresh.ok());
  auto want = fresh->eval(all);
  ASSERT_TRUE(want.ok());
  const std::vector<float> expected(want->begin(), want->end());

  auto s = engine::Session::create(m, o);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->eval(prompt).ok());
  for (int32_t t : reply) ASSERT_TRUE(s->eval(std::span(&t, 1)).ok());
  EXPECT_EQ(s->truncate(22), 20);  // back to the prompt's end
  std::vector<int32_t> rest(reply.begin(), reply.begin() + 2);
  rest.insert(rest.end(), next.begin(), next.end());
  auto got = s->eval(rest);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::vector<float>(got->begin(), got->end()), expected);
  // The checkpoint is now the end of `rest` (28): before it starts over and forgets it.
  EXPECT_EQ(s->truncate(27), 0);
  for (int32_t t : reply) ASSERT_TRUE(s->eval(std::span(&t, 1)).ok());
  EXPECT_EQ(s->truncate(3), 0) << "no checkpoint of these tokens";
}

// Two sequences in one step (prompt chunks of different lengths, then decode tokens together)
// give each the logits it gets alone.
TEST(HybridBatch, SequencesBatchedMatchAlone) {
  const Model& m = load_tiny("tiny-qwen35");
  const int64_t bs = 16, n_vocab = m.config().n_vocab;
  const WorkspaceLimits lim = two_sequence_limits(bs);
  ThreadPool pool(2);
  backend::CpuBackend cpu(m.kernels(), pool);
  const std::vector<std::vector<int32_t>> prompts = {tokens_of(13, 5), tokens_of(21, 9)};
  const int n_decode = 3;
  // logits[s][k]: sequence s's logits after its prompt (k = 0) and after each decode token.
  auto run = [&](bool together) {
    std::vector<std::vector<std::vector<float>>> out(2);
    auto kv = kv::KvCache::create(m.kv_config(8, kv::KvType::kF16, bs, 2));
    EXPECT_TRUE(kv.ok());
    auto ws = Workspace::create(m.config(), lim);
    EXPECT_TRUE(ws.ok());
    const std::vector<std::vector<int32_t>> tables = {{0, 1, 2}, {4, 5, 6}};
    std::vector<int32_t> n_past = {0, 0};
    auto step = [&](const std::vector<int>& seqs, const std::vector<std::vector<int32_t>>& toks) {
      Batch b;
      for (size_t i = 0; i < seqs.size(); ++i) {
        const int s = seqs[i];
        const auto idx = b.add_seq(tables[static_cast<size_t>(s)],
                                   n_past[static_cast<size_t>(s)] + static_cast<int32_t>(toks[i].size()),
                                   /*state_slot=*/s);
        for (size_t j = 0; j < toks[i].size(); ++j) {
          b.add_token(toks[i][j], n_past[static_cast<size_t>(s)] + static_cast<int32_t>(j), idx,
                      j + 1 == toks[i].size(), bs);
        }
      }
      auto r = m.forward(b, *kv, *ws, cpu);
      ASSERT_TRUE(r.ok()) << r.status().message();
      for (size_t i = 0; i < seqs.size(); ++i) {
        const auto* row = r->data() + static_cast<int64_t>(i) * n_vocab;
        out[static_cast<size_t>(seqs[i])].emplace_back(row, row + n_vocab);
        n_past[static_cast<size_t>(seqs[i])] += static_cast<int32_t>(toks[i].size());
      }
    };
    if (together) {
      step({0, 1}, {prompts[0], prompts[1]});
      for (int k = 0; k < n_decode; ++k) step({1, 0}, {{static_cast<int32_t>(40 + k)}, {static_cast<int32_t>(7 + k)}});
    } else {
      for (int s = 0; s < 2; ++s) {
        step({s}, {prompts[static_cast<size_t>(s)]});
        for (int k = 0; k < n_decode; ++k) step({s}, {{static_cast<int32_t>(s == 0 ? 7 + k : 40 + k)}});
      }
    }
    return out;
  };
  const auto alone = run(false), together = run(true);
  for (int s = 0; s < 2; ++s) {
    ASSERT_EQ(together[static_cast<size_t>(s)].size(), alone[static_cast<size_t>(s)].size());
    for (size_t k = 0; k < alone[static_cast<size_t>(s)].size(); ++k) {
      EXPECT_EQ(together[static_cast<size_t>(s)][k], alone[static_cast<size_t>(s)][k]) << "seq " << s << " step " << k;
    }
  }
}

// Steps that would use a state wrongly are refused with one line, and change nothing.
TEST(HybridBatch, RefusesStepsThatDoNotContinueTheState) {
  const Model& m = load_tiny("tiny-qwen35");
  auto kv = kv::KvCache::create(m.kv_config(4, kv::KvType::kF16, 16, 2));
  ASSERT_TRUE(kv.ok());
  WorkspaceLimits lim;
  lim.max_tokens = 16;
  lim.max_context = 64;
  auto ws = Workspace::create(m.config(), lim);
  ASSERT_TRUE(ws.ok());
  ThreadPool pool(1);
  backend::CpuBackend cpu(m.kernels(), pool);
  auto one = [&](int32_t pos, int32_t slot) {
    Batch b;
    b.add_seq({0, 1}, pos + 1, slot);
    b.add_token(5, pos, 0, true, 16);
    auto r = m.forward(b, *kv, *ws, cpu);
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(one(0, 0), "");
  EXPECT_EQ(one(1, 0), "");
  EXPECT_NE(one(5, 0).find("recurrent state holds 2 positions"), std::string::npos);
  EXPECT_NE(one(1, 1).find("recurrent state holds 0 positions"), std::string::npos);
  EXPECT_NE(one(0, 2).find("slot 2 of 2"), std::string::npos);
  EXPECT_NE(one(0, -1).find("slot -1"), std::string::npos);
  EXPECT_EQ(kv->states().positions(0), 2);
  EXPECT_EQ(one(2, 0), "");  // the refused steps left slot 0 where it was
  // A sequence's rows apart, or out of order.
  Batch apart;
  apart.add_seq({0, 1}, 5, 0);
  apart.add_seq({2, 3}, 1, 1);
  apart.add_token(1, 3, 0, false, 16);
  apart.add_token(2, 0, 1, false, 16);
  apart.add_token(3, 4, 0, true, 16);
  auto r = m.forward(apart, *kv, *ws, cpu);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rows are not together"), std::string::npos) << r.status().message();
  // A cache made without state slots.
  kv::KvCacheConfig no_state = m.kv_config(4, kv::KvType::kF16, 16, 1);
  no_state.state = {};
  auto bare = kv::KvCache::create(no_state);
  ASSERT_TRUE(bare.ok());
  Batch b;
  b.add_seq({0}, 1, 0);
  b.add_token(1, 0, 0, true, 16);
  auto r2 = m.forward(b, *bare, *ws, cpu);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("recurrent state"), std::string::npos) << r2.status().message();
}

// Snapshots taken inside a step hold, bit for bit, the state of a run that stopped there, and a
// sequence continued from one gives the logits of the uninterrupted run; misplaced ones are
// refused.
TEST(HybridBatch, SnapshotsHoldTheStateWhereTheyAreTaken) {
  const Model& m = load_tiny("tiny-qwen35");
  const int64_t bs = 16, n_vocab = m.config().n_vocab;
  const WorkspaceLimits lim = two_sequence_limits(bs);
  ThreadPool pool(2);
  backend::CpuBackend cpu(m.kernels(), pool);
  const std::vector<int32_t> toks = tokens_of(37, 3), other = tokens_of(20, 8);
  auto new_cache = [&] {
    auto kv = kv::KvCache::create(m.kv_config(8, kv::KvType::kF16, bs, 6));
    EXPECT_TRUE(kv.ok());
    return std::move(kv).value();
  };
  auto ws = Workspace::create(m.config(), lim);
  ASSERT_TRUE(ws.ok());
  // One step: toks on slot 0 (snapshots after 16, 32 and all 37 positions into slots 2, 3, 4)
  // beside `other` on slot 1 (a snapshot where it starts, into slot 5).
  kv::KvCache kv = new_cache();
  Batch b;
  b.add_seq({0, 1, 2}, 37, 0);
  b.add_seq({4, 5}, 20, 1);
  for (int32_t p = 0; p < 37; ++p) b.add_token(toks[static_cast<size_t>(p)], p, 0, p == 36, bs);
  for (int32_t p = 0; p < 20; ++p) b.add_token(other[static_cast<size_t>(p)], p, 1, p == 19, bs);
  b.state_snapshots = {{0, 32, 3}, {0, 16, 2}, {0, 37, 4}, {1, 0, 5}};
  auto full = m.forward(b, kv, *ws, cpu);
  ASSERT_TRUE(full.ok()) << full.status().message();
  const std::vector<float> last(full->begin(), full->begin() + n_vocab);
  const uint64_t slot_bytes = kv::recurrent_slot_bytes(kv.states().config());
  auto same_state = [&](kv::KvCache& a, int64_t sa, kv::KvCache& c, int64_t sc) {
    return a.states().positions(sa) == c.states().positions(sc) &&
           std::memcmp(a.states().data(0, sa), c.states().data(0, sc), slot_bytes) == 0;
  };
  EXPECT_TRUE(same_state(kv, 4, kv, 0));
  EXPECT_EQ(kv.states().positions(5), 0);
  for (auto [n, slot] : {std::pair{16, 2}, std::pair{32, 3}}) {
    kv::KvCache ref = new_cache();
    Batch r;
    r.add_seq({0, 1, 2}, n, 0);
    for (int32_t p = 0; p < n; ++p) r.add_token(toks[static_cast<size_t>(p)], p, 0, p + 1 == n, bs);
    ASSERT_TRUE(m.forward(r, ref, *ws, cpu).ok());
    EXPECT_TRUE(same_state(kv, slot, ref, 0)) << "snapshot after " << n;
  }
  // Continue from the snapshot after 16 positions (slot 2): the last row's logits are the full run's.
  Batch c;
  c.add_seq({0, 1, 2}, 37, 2);
  for (int32_t p = 16; p < 37; ++p) c.add_token(toks[static_cast<size_t>(p)], p, 0, p == 36, bs);
  auto cont = m.forward(c, kv, *ws, cpu);
  ASSERT_TRUE(cont.ok()) << cont.status().message();
  EXPECT_EQ(std::vector<float>(cont->begin(), cont->begin() + n_vocab), last);
  // Refusals: outside the rows, into a sequence's own slot, of a sequence without rows.
  auto refused = [&](Batch::StateSnapshot snap) {
    Batch d;
    d.add_seq({0, 1, 2}, 38, 0);
    d.add_seq({4, 5}, 20, 1);
    d.add_token(9, 37, 0, true, bs);
    d.state_snapshots = {snap};
    auto r = m.forward(d, kv, *ws, cpu);
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(refused({0, 39, 3}).find("rows here run from position 37 to 37"), std::string::npos);
  EXPECT_NE(refused({0, 38, 0}).find("slot 0 used twice"), std::string::npos);
  EXPECT_NE(refused({1, 20, 3}).find("no rows in the step"), std::string::npos);
  EXPECT_NE(refused({0, 38, 6}).find("slot 6 of 6"), std::string::npos);
  EXPECT_EQ(kv.states().positions(0), 37);  // nothing ran
}

TEST(HybridLoad, TinyQwen35Loads) {
  EXPECT_EQ(testing::load_error("tiny-qwen35", [](gguf::Writer&) {}), "");
  EXPECT_EQ(testing::load_error("tiny-qwen35moe", [](gguf::Writer&) {}), "");
}

TEST(HybridLoad, RefusesWhatItCannotRun) {
  auto err = [](auto edit) { return testing::load_error("tiny-qwen35", edit); };
  EXPECT_NE(err([](gguf::Writer& w) { w.erase("qwen35.ssm.conv_kernel"); }).find("missing metadata 'qwen35.ssm.conv_kernel'"), std::string::npos);
  EXPECT_NE(err([](gguf::Writer& w) { w.set("qwen35.ssm.time_step_rank", gguf::make_u32(3)); }).find("not a multiple of"), std::string::npos);
  EXPECT_NE(err([](gguf::Writer& w) { w.set("qwen35.ssm.inner_size", gguf::make_u32(96)); }).find("ssm.inner_size"), std::string::npos);
  EXPECT_NE(err([](gguf::Writer& w) {
              w.set("qwen35.attention.recurrent_layers", gguf::make_i32_array({1, 1, 1, 0, 1, 1, 1, 0}));
            }).find("recurrent_layers"), std::string::npos);
  // Sections that give a rotated pair a vision position (the fourth stream).
  EXPECT_NE(err([](gguf::Writer& w) {
              w.set("qwen35.rope.dimension_sections", gguf::make_i32_array({1, 1, 1, 1}));
            }).find("vision position"), std::string::npos);
  // A linear layer's tensor of the wrong size.
  EXPECT_NE(err([](gguf::Writer& w) {
              w.set("qwen35.ssm.state_size", gguf::make_u32(8));
              w.set("qwen35.ssm.inner_size", gguf::make_u32(32));
            }).find("blk.0.attn_qkv.weight"), std::string::npos);
  // MTP blocks: a trunk must remain.
  EXPECT_NE(err([](gguf::Writer& w) { w.set("qwen35.nextn_predict_layers", gguf::make_u32(8)); }).find("nextn_predict_layers"), std::string::npos);
}

// A file that declares an MTP block after the trunk but leaves its tensors out (llama.cpp's
// converter --no-mtp) loads: block_count 9 with one nextn layer runs the same 8 trunk layers
// (mtp_test.cpp: such a model has no MTP head).
TEST(HybridLoad, SkipsMtpBlocks) {
  EXPECT_EQ(testing::load_error("tiny-qwen35", [](gguf::Writer& w) {
              w.set("qwen35.block_count", gguf::make_u32(9));
              w.set("qwen35.nextn_predict_layers", gguf::make_u32(1));
            }), "");
}

}  // namespace
}  // namespace ridge::model
