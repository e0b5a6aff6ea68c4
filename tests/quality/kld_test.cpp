// The log-probability file (llama-perplexity's --kl-divergence-base format) and the KL
// divergence statistics: compression within half a quantization step, the layout and its
// refusals, and the divergence of known distributions computed in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "quality/kld.h"
#include "quality/log_prob_file.h"

namespace ridge::quality {
namespace {

std::vector<double> log_softmax(const std::vector<float>& z) {
  double max = z[0], sum = 0;
  for (float v : z) max = std::max<double>(max, v);
  for (float v : z) sum += std::exp(v - max);
  std::vector<double> out;
  for (float v : z) out.push_back(v - max - std::log(sum));
  return out;
}

std::vector<float> random_logits(std::mt19937& rng, int n, float spread) {
  std::normal_distribution<float> d(0.f, spread);
  std::vector<float> z(static_cast<size_t>(n));
  for (float& v : z) v = d(rng);
  return z;
}

TEST(LogProbFile, CompressedLogProbsWithinHalfAStep) {
  std::mt19937 rng(3);
  constexpr int kVocab = 1001;  // odd: the row pads to an even count
  EXPECT_EQ(log_prob_row_width(kVocab), 1002 + 4);
  std::vector<uint16_t> row(static_cast<size_t>(log_prob_row_width(kVocab)));
  for (float spread : {0.5f, 4.0f, 12.0f}) {
    const std::vector<float> z = random_logits(rng, kVocab, spread);
    const std::vector<double> want = log_softmax(z);
    const double nll = compress_log_probs(z, 17, row);
    EXPECT_NEAR(nll, -want[17], 1e-5);
    float scale;
    std::memcpy(&scale, row.data(), sizeof scale);
    const double max_lp = *std::max_element(want.begin(), want.end());
    for (int i = 0; i < kVocab; ++i) {
      if (want[static_cast<size_t>(i)] > max_lp - 16) {
        EXPECT_NEAR(stored_log_prob(row, i), want[static_cast<size_t>(i)], scale / 2 + 1e-4) << i;
      } else {
        EXPECT_LE(stored_log_prob(row, i), max_lp - 16 + 1e-3) << i;  // clamped to the floor
      }
    }
  }
}

TEST(LogProbFile, RoundTripAndRefusals) {
  const std::string path = (std::filesystem::temp_directory_path() / ("ridge_lp_" + std::to_string(::getpid()))).string();
  LogProbHeader h;
  h.n_ctx = 8;
  h.n_vocab = 5;
  h.n_chunk = 2;
  for (int i = 0; i < 16; ++i) h.tokens.push_back(i % 5);
  EXPECT_EQ(h.rows_per_chunk(), 3);
  auto w = LogProbWriter::create(path, h);
  ASSERT_TRUE(w.ok()) << w.status().message();
  std::vector<uint16_t> row(static_cast<size_t>(log_prob_row_width(5)));
  for (int r = 0; r < 6; ++r) {
    std::fill(row.begin(), row.end(), static_cast<uint16_t>(r));
    if (r < 5) {
      EXPECT_TRUE(w->write_row(row).ok());
    }
  }
  EXPECT_FALSE(w->close().ok()) << "a row short";
  ASSERT_TRUE(w->write_row(row).ok());
  EXPECT_FALSE(w->write_row(row).ok()) << "a row too many";
  ASSERT_TRUE(w->close().ok());
  EXPECT_EQ(std::filesystem::file_size(path), 8u + 12 + 16 * 4 + 6 * 10 * 2);
  auto r = LogProbReader::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->header().n_ctx, 8u);
  EXPECT_EQ(r->header().tokens, h.tokens);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(r->read_row(row).ok());
    EXPECT_EQ(row[7], i);
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 2);
  auto cut = LogProbReader::open(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("where its header says"), std::string::npos) << cut.status().message();
  std::ofstream(path) << "not a log-probability file at all";
  auto text = LogProbReader::open(path);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("is not a file of log-probabilities"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(KldStats, DivergenceOfKnownDistributions) {
  std::mt19937 rng(5);
  constexpr int kVocab = 64;
  KldStats same, other;
  double want_kld = 0;
  int same_top = 0;
  std::vector<uint16_t> row(static_cast<size_t>(log_prob_row_width(kVocab)));
  for (int t = 0; t < 200; ++t) {
    const std::vector<float> base = random_logits(rng, kVocab, 2.0f);
    std::vector<float> q = base;
    for (float& v : q) v += std::normal_distribution<float>(0.f, 0.5f)(rng);
    compress_log_probs(base, t % kVocab, row);
    same.add(base, row, t % kVocab);
    other.add(q, row, t % kVocab);
    const std::vector<double> lp = log_softmax(base), lq = log_softmax(q);
    for (int i = 0; i < kVocab; ++i) want_kld += std::exp(lp[static_cast<size_t>(i)]) * (lp[static_cast<size_t>(i)] - lq[static_cast<size_t>(i)]);
    same_top += std::max_element(base.begin(), base.end()) - base.begin() == std::max_element(q.begin(), q.end()) - q.begin();
  }
  const std::string r_same = same.report(), r_other = other.report();
  auto value = [](const std::string& r, const std::string& label) {
    const size_t at = r.find(label);
    EXPECT_NE(at, std::string::npos) << label;
    return std::stod(r.substr(r.find(':', at) + 1));
  };
  EXPECT_NEAR(value(r_same, "Mean    KLD"), 0.0, 1e-5);
  EXPECT_NEAR(value(r_same, "Same top p"), 100.0, 1e-9);
  EXPECT_NEAR(value(r_same, "Mean PPL(Q)/PPL(base)"), 1.0, 1e-4);
  EXPECT_NEAR(value(r_other, "Mean    KLD"), want_kld / 200, 1e-3 * want_kld / 200 + 1e-5);
  EXPECT_NEAR(value(r_other, "Same top p"), 100.0 * same_top / 200, 1e-6);
  EXPECT_EQ(other.count(), 200);
  KldStats few;
  few.add(random_logits(rng, kVocab, 1.0f), row, 0);
  EXPECT_NE(few.report().find("no statistics below 100"), std::string::npos);
}

}  // namespace
}  // namespace ridge::quality
