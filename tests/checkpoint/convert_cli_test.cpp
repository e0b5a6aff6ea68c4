// ridge convert through the real binary, end to end: a synthetic model with a real vocabulary is
// written out as a Hugging Face checkpoint folder (hf_export.h), converted back by
// `ridge convert`, and the converted file (and the folder itself, `ridge run -m DIR`) generates
// the same greedy text as the original in ridge and in llama.cpp (the peer harness named by RIDGE_PEER, which scripts/test.sh exports;
// that half is skipped without it); `--type q8_0` gives a file both run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf/reader.h"
#include "hf_export.h"
#include "hf_export_gemma4.h"
#include "hf_export_gpt_oss.h"
#include "model/config.h"
#include "run_binary.h"

namespace ridge::checkpoint {
namespace convert_cli_test {

using Output = ::ridge::testing::CmdOutput;

Output run(const std::string& cmd) { return ::ridge::testing::run_shell(cmd); }

std::string ridge(const std::string& args) { return std::string(RIDGE_BINARY) + " " + args; }

struct Case {
  const char* preset;
  const char* type;
  const char* vocab;
};

class ConvertCli : public ::testing::TestWithParam<Case> {};

TEST_P(ConvertCli, GeneratesWhatTheOriginalGenerates) {
  const Case c = GetParam();
  const std::string vocab = std::string(RIDGE_SHARED_DIR) + "/vocab/ggml-vocab-" + c.vocab + ".gguf";
  if (!std::filesystem::exists(vocab)) GTEST_SKIP() << "no " << vocab << " (../shared absent)";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ridge-convert-cli-" + std::to_string(::getpid()) + "-" + c.preset + "-" + c.vocab);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string original = (dir / "original.gguf").string(), converted = (dir / "converted.gguf").string();
  const Output made = run(ridge(std::string("synth --preset ") + c.preset + " --type " + c.type + " --vocab " +
                                vocab + " --seed 5 -t 1 -o " + original + " 2>&1"));
  ASSERT_EQ(made.rc, 0) << made.text;
  {  // Qwen3.5's a as a checkpoint can give it back (-exp of a float A_log): hf_export_qwen35.h
    std::ifstream in(original, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    auto f = gguf::File::parse(bytes, original);
    ASSERT_TRUE(f.ok());
    testing::snap_ssm_a(bytes, *f);
    std::ofstream(original, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                    static_cast<std::streamsize>(bytes.size()));
  }
  const bool gpt_oss = std::string(c.preset) == "tiny-gpt-oss";
  if (gpt_oss) {  // the experts MXFP4 (as openai/gpt-oss ships them), the rest in c.type
    const std::string q = (dir / "q.gguf").string();
    const Output made_q = run(ridge(std::string("synth --preset ") + c.preset + " --type mxfp4 --vocab " + vocab +
                                    " --seed 5 -t 1 -o " + q + " 2>&1"));
    ASSERT_EQ(made_q.rc, 0) << made_q.text;
    auto fa = gguf::File::open(original);
    auto fq = gguf::File::open(q);
    ASSERT_TRUE(fa.ok() && fq.ok());
    const std::vector<uint8_t> bytes = testing::with_experts_of(*fa, &*fq, false);
    std::ofstream(original, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                    static_cast<std::streamsize>(bytes.size()));
  }
  {
    auto f = gguf::File::open(original);
    ASSERT_TRUE(f.ok());
    auto cfg = model::config_from_gguf(*f);
    ASSERT_TRUE(cfg.ok());
    if (gpt_oss) {
      testing::write_gpt_oss_checkpoint(*f, *cfg, dir / "hf");
    } else if (std::string(c.preset).starts_with("tiny-gemma4")) {  // the multimodal form for the MoE
      testing::write_gemma4_checkpoint(*f, *cfg, dir / "hf", {.multimodal = cfg->is_moe()});
    } else {
      testing::write_checkpoint(*f, *cfg, dir / "hf", 2);
    }
  }
  const Output conv = run(ridge("convert " + (dir / "hf").string() + " " + converted + " 2>&1"));
  ASSERT_EQ(conv.rc, 0) << conv.text;
  EXPECT_NE(conv.text.find("wrote " + converted), std::string::npos) << conv.text;

  const std::string gen = " -p 'The bandwidth wall of' -n 16 --temp 0 -t 1 2>/dev/null";
  const Output want = run(ridge("run -m " + original + gen));
  const Output got = run(ridge("run -m " + converted + gen));
  ASSERT_EQ(want.rc, 0);
  ASSERT_FALSE(want.text.empty());
  EXPECT_EQ(got.text, want.text);
  // The folder itself as a model (converted in memory).
  EXPECT_EQ(run(ridge("run -m " + (dir / "hf").string() + gen)).text, want.text);

  const Output quant = run(ridge("convert " + (dir / "hf").string() + " " + (dir / "q8.gguf").string() +
                                 " --type q8_0 -t 1 2>&1"));
  if (gpt_oss) {  // MXFP4 experts are quantized already: refused in one line
    EXPECT_EQ(quant.rc, 1) << quant.text;
    EXPECT_NE(quant.text.find("mxfp4"), std::string::npos) << quant.text;
    EXPECT_EQ(std::count(quant.text.begin(), quant.text.end(), '\n'), 1) << quant.text;
    EXPECT_FALSE(std::filesystem::exists(dir / "q8.gguf"));
  } else {
    ASSERT_EQ(quant.rc, 0) << quant.text;
    EXPECT_EQ(run(ridge("run -m " + (dir / "q8.gguf").string() + gen)).rc, 0);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "q8.gguf.unquantized"));

  if (const char* peer = std::getenv("RIDGE_PEER"); peer != nullptr && std::filesystem::exists(peer)) {
    for (const std::string& file : {original, converted}) {
      const Output theirs = run("node " + std::string(peer) + " greedy --model " + file +
                                " --prompt 'The bandwidth wall of' -n 16 2>/dev/null");
      ASSERT_EQ(theirs.rc, 0) << file;
      const nlohmann::json j = nlohmann::json::parse(theirs.text, nullptr, false);
      ASSERT_TRUE(j.is_object()) << theirs.text;
      EXPECT_EQ(j.at("text").get<std::string>() + "\n", want.text) << "llama.cpp on " << file;
    }
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Architectures, ConvertCli,
                         ::testing::Values(Case{"tiny-qwen3", "bf16", "qwen2"}, Case{"tiny-llama", "f16", "llama-bpe"},
                                           Case{"tiny-qwen3moe", "bf16", "qwen2"},
                                           Case{"tiny-llama", "f32", "llama-spm"}, Case{"tiny-gemma3", "bf16", "qwen2"},
                                           Case{"tiny-gemma2", "f16", "qwen2"}, Case{"tiny-qwen35", "f16", "qwen2"},
                                           Case{"tiny-qwen35moe", "bf16", "qwen2"},
                                           Case{"tiny-qwen35-mtp", "f32", "qwen2"},
                                           Case{"tiny-gpt-oss", "bf16", "qwen2"}, Case{"tiny-gemma4", "f32", "qwen2"},
                                           Case{"tiny-gemma4moe", "f16", "qwen2"}),
                         [](const auto& p) {
                           std::string s = std::string(p.param.preset) + "_" + p.param.type + "_" + p.param.vocab;
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s;
                         });

TEST(ConvertCliErrors, OneLineEach) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ridge-convert-err-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Output o = run(ridge("convert " + (dir / "absent").string() + " out.gguf 2>&1"));
  EXPECT_EQ(o.rc, 2) << o.text;
  o = run(ridge("convert " + dir.string() + " " + (dir / "out.gguf").string() + " 2>&1"));
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.text.find("config.json"), std::string::npos) << o.text;
  EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << o.text;
  std::ofstream(dir / "config.json") << R"({"architectures":["MambaForCausalLM"]})";
  o = run(ridge("convert " + dir.string() + " " + (dir / "out.gguf").string() + " 2>&1"));
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.text.find("Mamba"), std::string::npos) << o.text;
  EXPECT_FALSE(std::filesystem::exists(dir / "out.gguf"));
  o = run(ridge("convert " + dir.string() + " " + (dir / "out.gguf").string() + " --threads 0 2>&1"));
  EXPECT_EQ(o.rc, 2) << o.text;
  EXPECT_EQ(std::count(o.text.begin(), o.text.end(), '\n'), 1) << o.text;
  EXPECT_FALSE(std::filesystem::exists(dir / "out.gguf"));
  std::filesystem::remove_all(dir);
}

}  // namespace convert_cli_test
}  // namespace ridge::checkpoint
