// ridge imatrix (quality/imatrix.h): the sums llama-imatrix writes for the same model and text
// (data/imatrix_reference*.gguf, regen_imatrix_reference.sh): dense, mixtures of experts and
// Gated DeltaNet layers, whatever the step size; the file read back as written; bad input
// refused in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "kernels/kernels.h"
#include "offline/presets.h"
#include "offline/synth.h"
#include "quality/imatrix.h"
#include "quality/perplexity.h"
#include "test_files.h"
#include "tokenizer/tokenizer.h"

namespace ridge::quality {
namespace {

struct Synthetic {
  std::vector<uint8_t> bytes;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
};

// `ridge synth --preset P --type f32 --seed S`, in memory.
std::unique_ptr<Synthetic> synthetic(const std::string& preset, uint64_t seed) {
  auto s = std::make_unique<Synthetic>();
  auto cfg = offline::preset_config(preset);
  EXPECT_TRUE(cfg.ok());
  offline::SynthOptions so;
  so.type = GgmlType::kF32;
  so.seed = seed;
  so.n_threads = 1;
  gguf::Writer w;
  EXPECT_TRUE(offline::build_synthetic_model(*cfg, so, w).ok());
  s->bytes = std::move(w.write_to_memory()).value();
  auto file = gguf::File::parse(s->bytes, preset + ".gguf");
  EXPECT_TRUE(file.ok());
  auto m = model::Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()),
                                   kernels::kernels_for(kernels::best_isa()));
  EXPECT_TRUE(m.ok()) << m.status().message();
  s->model = std::make_unique<model::Model>(std::move(m).value());
  auto tok = tokenizer::Tokenizer::from_gguf(s->model->file());
  EXPECT_TRUE(tok.ok());
  s->tok = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
  return s;
}

std::string story() {
  std::ifstream in(testing::kQualityData + "story.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<Imatrix> collect(const Synthetic& s, int64_t n_ctx, int64_t n_batch) {
  const std::vector<int32_t> tokens = s.tok->encode(story(), true, false);
  ImatrixOptions o;
  o.n_ctx = n_ctx;
  o.n_batch = n_batch;
  o.bos = chunk_bos(*s.tok);
  ThreadPool pool(2);
  return collect_imatrix(*s.model, tokens, o, pool);
}

// Every entry of `a` against `b`: same names, shapes and counts, sums within rel.
void expect_close(const Imatrix& a, const Imatrix& b, double rel) {
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (const auto& [name, e] : b.entries) {
    const auto it = a.entries.find(name);
    ASSERT_NE(it, a.entries.end()) << name;
    EXPECT_EQ(it->second.n_cols, e.n_cols) << name;
    EXPECT_EQ(it->second.counts, e.counts) << name;
    ASSERT_EQ(it->second.in_sum2.size(), e.in_sum2.size()) << name;
    for (size_t j = 0; j < e.in_sum2.size(); ++j) {
      EXPECT_NEAR(it->second.in_sum2[j], e.in_sum2[j], rel * std::fabs(e.in_sum2[j])) << name << " column " << j;
    }
  }
}

TEST(Imatrix, MatchesLlamaImatrix) {
  auto ref = read_imatrix(testing::kQualityData + "imatrix_reference.gguf");
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_EQ(ref->chunk_size, 64);
  EXPECT_EQ(ref->datasets, std::vector<std::string>{"story.txt"});
  // 2 layers x (q, k, v, output, gate, up, down); q, k and v share their input.
  ASSERT_EQ(ref->entries.size(), 14u);
  const auto s = synthetic("tiny-qwen3", 7);
  auto ours = collect(*s, 64, 64);
  ASSERT_TRUE(ours.ok()) << ours.status().message();
  EXPECT_EQ(ours->chunk_count, ref->chunk_count);
  EXPECT_EQ(ours->chunk_size, 64);
  expect_close(*ours, *ref, 1e-4);  // measured: 4e-6 (activations differ in the last bits)
  // Steps of 32 tokens record the same rows (float sums in another order).
  auto halves = collect(*s, 64, 32);
  ASSERT_TRUE(halves.ok());
  expect_close(*halves, *ours, 1e-5);
}

// Mixtures of experts: the router's input, each expert's routed rows (counts per expert equal
// llama-imatrix's: the same routing), its down inputs; gpt-oss's biased, clamped SwiGLU.
TEST(Imatrix, MixtureOfExpertsMatchLlamaImatrix) {
  for (const char* preset : {"tiny-qwen3moe", "tiny-gpt-oss"}) {
    SCOPED_TRACE(preset);
    auto ref = read_imatrix(testing::kQualityData + "imatrix_reference-" + preset + ".gguf");
    ASSERT_TRUE(ref.ok()) << ref.status().message();
    const auto s = synthetic(preset, 7);
    auto ours = collect(*s, 64, 64);
    ASSERT_TRUE(ours.ok()) << ours.status().message();
    const ImatrixEntry& down = ref->entries.at("blk.1.ffn_down_exps.weight");
    ASSERT_EQ(down.counts.size(), static_cast<size_t>(s->model->config().n_expert));
    expect_close(*ours, *ref, 1e-4);  // measured: 1.3e-5 (qwen3moe), 5.2e-5 (gpt-oss)
  }
}

// Qwen3.5's Gated DeltaNet layers: their in-projections (qkv, z, beta, alpha) take the normed
// input of every row; the output projection is a matmul of its own.
TEST(Imatrix, GatedDeltaNetMatchesLlamaImatrix) {
  auto ref = read_imatrix(testing::kQualityData + "imatrix_reference-tiny-qwen35.gguf");
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  const auto s = synthetic("tiny-qwen35", 7);
  auto ours = collect(*s, 64, 64);
  ASSERT_TRUE(ours.ok()) << ours.status().message();
  expect_close(*ours, *ref, 1e-3);  // measured: 1.2e-4 (the delta rule's f32 sums)
}

// llama-imatrix's legacy .dat form of the same run as the GGUF reference: every weight's mean
// squared activation per column (in_sum2 / count; an expert's own) the same, its experts cut out
// of the one row the legacy form keeps them in.
TEST(Imatrix, ReadsTheLegacyForm) {
  auto dat = read_imatrix(testing::kQualityData + "imatrix_reference-tiny-qwen3moe.dat");
  ASSERT_TRUE(dat.ok()) << dat.status().message();
  auto ref = read_imatrix(testing::kQualityData + "imatrix_reference-tiny-qwen3moe.gguf");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(dat->datasets, std::vector<std::string>{"story.txt"});
  EXPECT_EQ(dat->chunk_count, 38);
  ASSERT_EQ(dat->entries.size(), ref->entries.size());
  for (auto& [name, e] : dat->entries) {
    const ImatrixEntry& g = ref->entries.at(name);
    ASSERT_EQ(e.counts.size(), 1u) << name;
    if (g.counts.size() > 1) {
      ASSERT_TRUE(split_matrices(e, g.n_cols, static_cast<int64_t>(g.counts.size()))) << name;
    }
    ASSERT_EQ(e.n_cols, g.n_cols) << name;
    for (size_t m = 0; m < g.counts.size(); ++m) {
      for (int64_t j = 0; j < g.n_cols; ++j) {
        const size_t i = m * static_cast<size_t>(g.n_cols) + static_cast<size_t>(j);
        const double want = g.counts[m] > 0 ? g.in_sum2[i] / static_cast<double>(g.counts[m]) : 1.0;  // unrouted: 1
        EXPECT_NEAR(e.in_sum2[i] / static_cast<double>(e.counts[m]), want, 1e-6 * want) << name << " " << i;
      }
    }
  }
  EXPECT_FALSE(split_matrices(dat->entries.begin()->second, 7, 3));
}

TEST(Imatrix, FileRoundTrip) {
  Imatrix im;
  im.datasets = {"a.txt", "b.txt"};
  im.chunk_count = 3;
  im.chunk_size = 128;
  im.entries["blk.0.ffn_down.weight"] = {4, {1.5f, 2.0f, 0.0f, 1e-30f}, {384}};
  im.entries["blk.0.ffn_down_exps.weight"] = {2, {1, 2, 3, 4, 5, 6}, {10, 0, 7}};  // 3 experts, one never routed
  const std::string path = ::testing::TempDir() + "imatrix_round_trip.gguf";
  ASSERT_TRUE(write_imatrix(im, path).ok());
  auto back = read_imatrix(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->datasets, im.datasets);
  EXPECT_EQ(back->chunk_count, 3);
  EXPECT_EQ(back->chunk_size, 128);
  expect_close(*back, im, 0.0);
  std::remove(path.c_str());
}

TEST(Imatrix, RefusesBadInput) {
  ThreadPool pool(1);
  ImatrixOptions o;
  o.n_ctx = 64;
  const std::vector<int32_t> tokens(200, 5);
  const auto dense = synthetic("tiny-qwen3", 1);
  auto r = collect_imatrix(*dense->model, std::span(tokens).first(100), o, pool);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "imatrix: the text has 100 tokens; a context of 64 needs at least 128");
  o.n_batch = 8;
  r = collect_imatrix(*dense->model, tokens, o, pool);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "imatrix: -b 8 is below 16: smaller steps are not recorded");
  auto not_one = read_imatrix(testing::kQualityData + "story.txt");
  EXPECT_FALSE(not_one.ok());
  // A legacy file that promises more values than it holds.
  const std::string path = ::testing::TempDir() + "imatrix_short.dat";
  {
    std::ofstream out(path, std::ios::binary);
    const int32_t head[] = {1, 4};
    out.write(reinterpret_cast<const char*>(head), sizeof(head));
    out.write("blk.", 4);
    const int32_t sizes[] = {1, 1 << 27};
    out.write(reinterpret_cast<const char*>(sizes), sizeof(sizes));
  }
  auto short_one = read_imatrix(path);
  ASSERT_FALSE(short_one.ok());
  EXPECT_NE(short_one.status().message().find("values past the end of the file"), std::string::npos)
      << short_one.status().message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ridge::quality
