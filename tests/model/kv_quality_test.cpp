// Quality of the KV dtypes: KL divergence of the next-token distributions (teacher-forced over a
// text) with bf16 / q8_0 KV against f16 KV. Prints the figures quoted in docs/kv.md.
//   stories260K (head_dim 8: q8_0 is rejected there), an in-memory tiny-qwen3 (head_dim 32), and
//   any GGUF named by RIDGE_KV_QUALITY_MODEL (e.g. `ridge synth --preset qwen3-0.6b --type q8_0`).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "offline/presets.h"
#include "offline/synth.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace ridge::model {
namespace {

constexpr const char* kText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park "
    "with her friends. One day, she saw a big red ball under a tall tree. She ran to get it, but a "
    "small brown dog took the ball and ran away. Lily was sad, but her mom said they could find "
    "the dog together. They looked everywhere and at last they found him sleeping by the pond.";

struct Kl {
  double mean = 0, max = 0;
  int64_t n = 0;
};

// All logits of `tokens` with the given KV type, in prompt chunks of 32 (prefill tiles and
// several blocks are exercised).
std::vector<float> logits_with(const Model& m, const std::vector<int32_t>& tokens, kv::KvType kv) {
  engine::SessionOptions o;
  o.n_ctx = static_cast<int64_t>(tokens.size());
  o.kv_type = kv;
  o.max_batch = 32;
  o.max_outputs = 32;
  auto s = engine::Session::create(m, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return {};
  auto r = s->eval(tokens, /*all_logits=*/true);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::vector<float>(r->begin(), r->end()) : std::vector<float>{};
}

void log_softmax(const float* x, int64_t n, std::vector<double>& out) {
  out.resize(static_cast<size_t>(n));
  double mx = -1e300, sum = 0;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - mx);
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = x[i] - mx - std::log(sum);
}

// KL(P_f16 || P_kv) per position, mean and max.
Kl kl_vs_f16(const Model& m, const std::vector<int32_t>& tokens, kv::KvType kv) {
  const int64_t nv = m.config().n_vocab;
  const auto ref = logits_with(m, tokens, kv::KvType::kF16);
  const auto got = logits_with(m, tokens, kv);
  Kl k;
  if (ref.empty() || got.size() != ref.size()) return {1e9, 1e9, 0};
  std::vector<double> lp, lq;
  for (size_t t = 0; t < tokens.size(); ++t) {
    log_softmax(ref.data() + t * static_cast<size_t>(nv), nv, lp);
    log_softmax(got.data() + t * static_cast<size_t>(nv), nv, lq);
    double kl = 0;
    for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
    k.mean += kl;
    k.max = std::max(k.max, kl);
  }
  k.n = static_cast<int64_t>(tokens.size());
  k.mean /= static_cast<double>(k.n);
  return k;
}

std::vector<int32_t> text_tokens(const Model& m) {
  std::vector<int32_t> t;
  auto tok = tokenizer::Tokenizer::from_gguf(m.file());
  if (tok.ok()) {
    const auto ids = tok->encode(kText, /*add_special=*/true, /*parse_special=*/false);
    t.assign(ids.begin(), ids.end());
  }
  for (int32_t i = 0; t.size() < 96; ++i) t.push_back((i * 7919) % static_cast<int32_t>(m.config().n_vocab));
  return t;
}

Kl report(const Model& m, const std::string& name, const std::vector<int32_t>& tokens, kv::KvType kv) {
  const Kl k = kl_vs_f16(m, tokens, kv);
  std::printf("[kv quality] %s: %s vs f16 KV over %lld tokens: mean KL %.3g, max KL %.3g\n", name.c_str(),
              std::string(kv::kv_type_name(kv)).c_str(), static_cast<long long>(k.n), k.mean, k.max);
  return k;
}

TEST(KvQuality, Stories260K) {
  if (!std::filesystem::exists(testing::stories_path())) GTEST_SKIP() << "no stories260K.gguf";
  auto m = Model::load(testing::stories_path(), testing::test_kernels());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto tokens = text_tokens(*m);
  ASSERT_GE(tokens.size(), 64u);
  EXPECT_LT(report(*m, "stories260K", tokens, kv::KvType::kBF16).mean, 1e-3);
  EXPECT_GT(report(*m, "stories260K", tokens, kv::KvType::kF32).mean, 0.0);  // f16 does round
  // head_dim 8 cannot hold q8_0 blocks of 32.
  engine::SessionOptions o;
  o.kv_type = kv::KvType::kQ8_0;
  auto s = engine::Session::create(*m, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("multiple of 32"), std::string::npos);
}

TEST(KvQuality, TinyQwen3) {
  auto cfg = offline::preset_config("tiny-qwen3");
  ASSERT_TRUE(cfg.ok());
  offline::SynthOptions so;
  so.type = GgmlType::kF16;
  so.seed = 5;
  so.n_threads = 1;
  gguf::Writer writer;
  ASSERT_TRUE(offline::build_synthetic_model(*cfg, so, writer).ok());
  auto bytes = writer.write_to_memory();
  ASSERT_TRUE(bytes.ok());
  auto file = gguf::File::parse(*bytes, "tiny-qwen3");
  ASSERT_TRUE(file.ok());
  auto m = Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()), testing::test_kernels());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto tokens = text_tokens(*m);
  const Kl b = report(*m, "tiny-qwen3 (random weights)", tokens, kv::KvType::kBF16);
  const Kl q = report(*m, "tiny-qwen3 (random weights)", tokens, kv::KvType::kQ8_0);
  EXPECT_LT(b.mean, 1e-3);
  EXPECT_LT(q.mean, 1e-3);
  EXPECT_GT(q.mean, 0.0);  // the KV type is really used
}

// RIDGE_KV_QUALITY_MODEL=/tmp/q.gguf ./test_model --gtest_filter='KvQuality.*'
TEST(KvQuality, ModelFromEnvironment) {
  const char* path = std::getenv("RIDGE_KV_QUALITY_MODEL");
  if (path == nullptr) GTEST_SKIP() << "set RIDGE_KV_QUALITY_MODEL to a GGUF file";
  auto m = Model::load(path, testing::test_kernels());
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto tokens = text_tokens(*m);
  tokens.resize(std::min<size_t>(tokens.size(), 128));  // big models: keep it to minutes
  report(*m, path, tokens, kv::KvType::kBF16);
  if (m->config().head_dim % 32 == 0) report(*m, path, tokens, kv::KvType::kQ8_0);
}

}  // namespace
}  // namespace ridge::model
