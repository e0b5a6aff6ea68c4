// `ridge quantize` as a user runs it: writes a loadable file, --dry-run prints the plan without
// writing, and every error is one line "ridge: error: ..." with exit 2 (usage) or 1 (runtime).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "kernels/quant/quants.h"
#include "quantize_test_util.h"

namespace ridge::offline {
namespace {

using namespace quantize_testing;  // NOLINT(google-build-using-namespace)
namespace fs = std::filesystem;

struct CliRun {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class QuantizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(RIDGE_BINARY)) GTEST_SKIP() << "ridge binary not built";
    dir_ = fs::temp_directory_path() / ("ridge_quantize_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    in_ = (dir_ / "in-f32.gguf").string();
    const Synth s = synth_f32(wide_config("qwen3"), 3);
    std::ofstream(in_, std::ios::binary).write(reinterpret_cast<const char*>(s.bytes->data()),
                                               static_cast<std::streamsize>(s.bytes->size()));
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  CliRun ridge(const std::string& args, const std::string& command = "quantize") {
    const std::string cmd = std::string(RIDGE_BINARY) + " " + command + " " + args + " >" +
                            (dir_ / "out.txt").string() + " 2>" + (dir_ / "err.txt").string();
    const int st = std::system(cmd.c_str());
    return CliRun{WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(dir_ / "out.txt"), slurp(dir_ / "err.txt")};
  }
  static void expect_one_error_line(const CliRun& r, int rc, const std::string& needle) {
    EXPECT_EQ(r.rc, rc) << r.err;
    EXPECT_EQ(r.err.rfind("ridge: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
  fs::path dir_;
  std::string in_;
};

TEST_F(QuantizeCli, WritesALoadableFileWithThePlannedTypes) {
  const std::string out = (dir_ / "q.gguf").string();
  CliRun r = ridge(in_ + " " + out + " q4_k_m -t 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("q4_k_m: "), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out + ".part"));
  auto in = gguf::File::open(in_);
  auto q = gguf::File::open(out);
  ASSERT_TRUE(in.ok() && q.ok());
  QuantizeOptions opt;
  opt.mix.mix = QuantMix::kQ4_K_M;
  auto plan = plan_quantization(*in, opt);
  ASSERT_TRUE(plan.ok());
  uint64_t bytes = 0;
  for (size_t i = 0; i < q->tensors().size(); ++i) {
    EXPECT_EQ(q->tensors()[i].type, plan->tensors[i].choice.type) << q->tensors()[i].name;
    bytes += q->tensors()[i].n_bytes;
  }
  EXPECT_EQ(bytes, plan->bytes_out);
}

TEST_F(QuantizeCli, DryRunPrintsThePlanAndWritesNothing) {
  const std::string out = (dir_ / "never.gguf").string();
  CliRun r = ridge(in_ + " " + out + " q3_k_m --dry-run --tensor-type 'ffn_up=q8_0'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_NE(r.out.find("blk.1.ffn_up.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(--tensor-type)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("q3_k_m: "), std::string::npos) << r.out;
  CliRun two = ridge(in_ + " q8_0 --dry-run");  // the output may be left out of a dry run
  EXPECT_EQ(two.rc, 0) << two.err;
}

TEST_F(QuantizeCli, ErrorsAreOneLine) {
  const std::string out = (dir_ / "o.gguf").string();
  expect_one_error_line(ridge(in_ + " " + out + " q7_k"), 2, "unknown quantization type 'q7_k'");
  expect_one_error_line(ridge(in_ + " " + out), 2, "expected IN.gguf OUT.gguf TYPE");
  expect_one_error_line(ridge(in_ + " " + out + " q4_0 --tensor-type attn_v"), 2, "PATTERN=TYPE");
  expect_one_error_line(ridge(in_ + " " + out + " q4_0 -t 0"), 2, "--threads");
  expect_one_error_line(ridge(in_ + " " + in_ + " q4_0"), 2, "is the input");
  expect_one_error_line(ridge((dir_ / "missing.gguf").string() + " " + out + " q4_0"), 1, "missing.gguf");
  ASSERT_EQ(ridge(in_ + " " + out + " q8_0").rc, 0);
  expect_one_error_line(ridge(out + " " + (dir_ / "o2.gguf").string() + " q4_k_m"), 1, "already quantized");
}

// iq1_*, iq2_*, iq3_xxs and iq3_xs write tensors that need an importance matrix (llama.cpp refuses
// them too): one line naming `ridge imatrix`, also for a --tensor-type; a dry run shows the plan
// and says so; iq3_s needs none. With one from `ridge imatrix`, the file is written.
TEST_F(QuantizeCli, LowBitIQuantsNeedAnImatrix) {
  const std::string out = (dir_ / "iq.gguf").string();
  CliRun r = ridge(in_ + " " + out + " iq2_xxs -t 2");
  expect_one_error_line(r, 2, "iq2_xxs writes 'blk.0.attn_q.weight' as iq2_xxs, which needs an importance matrix");
  EXPECT_NE(r.err.find("`ridge imatrix -m "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--imatrix"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".part"));
  expect_one_error_line(ridge(in_ + " " + out + " iq3_xs"), 2, "needs an importance matrix");
  if (kernels::can_quantize(GgmlType::kIQ1_S)) {  // --tensor-type takes only the types ridge writes
    expect_one_error_line(ridge(in_ + " " + out + " q4_k_m --tensor-type ffn_up=iq1_s"), 2,
                          "--tensor-type writes 'blk.0.ffn_up.weight' as iq1_s");
  }
  CliRun dry = ridge(in_ + " iq2_xxs --dry-run");
  ASSERT_EQ(dry.rc, 0) << dry.err;
  EXPECT_NE(dry.out.find("iq2_xxs: "), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("note: writing this needs an importance matrix"), std::string::npos) << dry.out;

  CliRun s = ridge(in_ + " iq3_s --dry-run");
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_NE(s.out.find("iq3_s: "), std::string::npos) << s.out;
  EXPECT_EQ(s.out.find("note:"), std::string::npos) << s.out;
  if (!kernels::can_quantize(GgmlType::kIQ3_S) || !kernels::can_quantize(GgmlType::kIQ2_XXS)) {
    GTEST_SKIP() << "kernels/quant cannot quantize to iq3_s / iq2_xxs yet";
  }
  CliRun w = ridge(in_ + " " + out + " iq3_s -t 2");
  ASSERT_EQ(w.rc, 0) << w.err;
  auto q = gguf::File::open(out);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->find_tensor("blk.0.attn_q.weight")->type, GgmlType::kIQ3_S);

  const std::string text = (dir_ / "text.txt").string(), im = (dir_ / "imatrix.gguf").string();
  std::ofstream(text) << "The quick brown fox jumps over the lazy dog. " << std::string(60, 'x');
  CliRun m = ridge("-m " + in_ + " -f " + text + " -o " + im + " -c 32 --chunks 2 -t 2", "imatrix");
  ASSERT_EQ(m.rc, 0) << m.err;
  CliRun iq = ridge(in_ + " " + out + " iq2_xxs -t 2 --imatrix " + im);
  ASSERT_EQ(iq.rc, 0) << iq.err;
  auto q2 = gguf::File::open(out);
  ASSERT_TRUE(q2.ok()) << q2.status().message();
  EXPECT_EQ(q2->find_tensor("blk.0.attn_q.weight")->type, GgmlType::kIQ2_XXS);
}

// A mixture-of-experts file (qwen2moe: 3-D expert stacks, a shared expert): the plan printed and
// the file written agree, expert stacks keep their 3-D shape.
TEST_F(QuantizeCli, MixtureOfExpertsFile) {
  const std::string moe_in = (dir_ / "moe-f32.gguf").string(), out = (dir_ / "moe-q4_k_m.gguf").string();
  const Synth s = synth_moe_f32(wide_moe_config("qwen2moe"), 5);
  ASSERT_TRUE(s.file);
  std::ofstream(moe_in, std::ios::binary).write(reinterpret_cast<const char*>(s.bytes->data()),
                                                static_cast<std::streamsize>(s.bytes->size()));
  CliRun dry = ridge(moe_in + " q4_k_m --dry-run");
  ASSERT_EQ(dry.rc, 0) << dry.err;
  EXPECT_NE(dry.out.find("blk.3.ffn_down_exps.weight"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("[256, 256, 4]"), std::string::npos) << dry.out;
  CliRun r = ridge(moe_in + " " + out + " q4_k_m -t 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  auto q = gguf::File::open(out);
  ASSERT_TRUE(q.ok()) << q.status().message();
  QuantizeOptions opt;
  opt.mix.mix = QuantMix::kQ4_K_M;
  auto plan = plan_quantization(*s.file, opt);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  uint64_t bytes = 0;
  for (size_t i = 0; i < q->tensors().size(); ++i) {
    EXPECT_EQ(q->tensors()[i].type, plan->tensors[i].choice.type) << q->tensors()[i].name;
    EXPECT_EQ(q->tensors()[i].shape, s.file->tensors()[i].shape) << q->tensors()[i].name;
    bytes += q->tensors()[i].n_bytes;
  }
  EXPECT_EQ(bytes, plan->bytes_out);
  EXPECT_EQ(q->find_tensor("blk.2.ffn_down_exps.weight")->type, GgmlType::kQ6_K);  // a more-bits layer
  EXPECT_EQ(q->find_tensor("blk.2.ffn_gate_inp.weight")->type, GgmlType::kF32);
}

}  // namespace
}  // namespace ridge::offline
