// ridge synth / ridge inspect through the real binary: determinism, shapes, JSON, and the
// one-line error convention (exit 2 usage, 1 runtime).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf/reader.h"

namespace {

struct CmdResult {
  int code;
  std::string out;  // stdout + stderr
};

CmdResult run(const std::string& args) {
  const std::string cmd = std::string(RIDGE_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class SynthInspect : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ridge_cli_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(SynthInspect, SameSeedSameBytesOtherSeedOtherBytes) {
  ASSERT_EQ(run("synth --preset tiny-qwen2 --type f16 --seed 7 -t 1 -o " + path("a.gguf")).code, 0);
  ASSERT_EQ(run("synth --preset tiny-qwen2 --type f16 --seed 7 -t 2 -o " + path("b.gguf")).code, 0);
  ASSERT_EQ(run("synth --preset tiny-qwen2 --type f16 --seed 8 -o " + path("c.gguf")).code, 0);
  const std::string a = slurp(path("a.gguf"));
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, slurp(path("b.gguf"))) << "thread count changed the output";
  EXPECT_NE(a, slurp(path("c.gguf")));
}

TEST_F(SynthInspect, ShapesFollowThePreset) {
  ASSERT_EQ(run("synth --preset tiny-qwen3 --type bf16 --layers 3 -o " + path("q3.gguf")).code, 0);
  auto f = ridge::gguf::File::open(path("q3.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->architecture(), "qwen3");
  EXPECT_EQ(*f->get_int("qwen3.block_count"), 3);
  const auto* q = f->find_tensor("blk.2.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, ridge::GgmlType::kBF16);
  EXPECT_EQ(q->shape, (std::vector<uint64_t>{64, 4 * 32}));  // tiny-qwen3: embd 64, 4 heads of 32
  EXPECT_NE(f->find_tensor("blk.0.attn_q_norm.weight"), nullptr);
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);  // tied embeddings
  EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->type, ridge::GgmlType::kF32);
}

TEST_F(SynthInspect, RealVocabularyIsCopied) {
  const std::string vocab = std::string(RIDGE_SHARED_DIR) + "/vocab/ggml-vocab-qwen2.gguf";
  if (!std::filesystem::exists(vocab)) GTEST_SKIP() << "shared data absent: " << vocab;
  ASSERT_EQ(run("synth --preset tiny-qwen3 --type f32 --vocab " + vocab + " -o " + path("v.gguf")).code, 0);
  auto f = ridge::gguf::File::open(path("v.gguf"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->get_string("tokenizer.ggml.pre"), "qwen2");
  const auto n_tokens = f->get_string_array("tokenizer.ggml.tokens")->size();
  EXPECT_EQ(f->find_tensor("token_embd.weight")->shape[1], n_tokens);
}

TEST_F(SynthInspect, InspectJsonAgreesWithTheFile) {
  ASSERT_EQ(run("synth --preset tiny-llama --type q8_0 -o " + path("l.gguf")).code, 0);
  CmdResult r = run("inspect --json " + path("l.gguf") + " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  auto f = ridge::gguf::File::open(path("l.gguf"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(j["tensors"].size(), f->tensors().size());
  EXPECT_EQ(j["config"]["n_layer"], 2);
  EXPECT_EQ(j["architecture"], "llama");
  uint64_t total = 0;
  for (const auto& t : f->tensors()) total += t.n_bytes;
  uint64_t by_type = 0;
  for (const auto& [k, v] : j["totals_by_type"].items()) by_type += v["bytes"].get<uint64_t>();
  EXPECT_EQ(by_type, total);
  EXPECT_GT(j["cost"]["weight_bytes_read_per_token"].get<double>(), 0.0);
  EXPECT_LE(j["cost"]["weight_bytes_read_per_token"].get<double>(), static_cast<double>(total));
  EXPECT_GT(j["cost"]["kv_bytes_per_token"]["f16"].get<double>(), 0.0);
  EXPECT_EQ(j["totals_by_type"]["q8_0"]["count"], 2 * 7 + 2);  // 7 matrices per layer, embd, output
}

TEST_F(SynthInspect, ErrorsAreOneLineWithExitCodes) {
  const std::pair<std::string, int> cases[] = {
      {"synth --preset nope --type f16 -o " + path("x.gguf"), 2},
      {"synth --preset tiny-llama --type q9_9 -o " + path("x.gguf"), 2},
      {"synth --preset tiny-llama --type f16", 2},
      {"synth --preset tiny-llama --type f16 --layers 0 -o " + path("x.gguf"), 2},
      {"synth --preset tiny-llama --type f16 -t 0 -o " + path("x.gguf"), 2},
      {"synth --preset tiny-llama -o /nonexistent-dir/x.gguf", 1},
      {"synth --bogus-flag", 2},
      {"inspect " + path("missing.gguf"), 1},
      {"inspect", 2},
      {"no-such-command", 2},
  };
  for (const auto& [args, code] : cases) {
    CmdResult r = run(args);
    EXPECT_EQ(r.code, code) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("ridge: error: ", 0), 0u) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
  }
  std::ofstream(path("text.gguf")) << "this is not a gguf file";
  CmdResult r = run("inspect " + path("text.gguf"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("not a GGUF file"), std::string::npos) << r.out;
}

}  // namespace
