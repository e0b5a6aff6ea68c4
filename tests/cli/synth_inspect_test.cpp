// ridge synth / ridge inspect through the real binary: determinism, shapes, JSON, and the
// one-line error convention (exit 2 usage, 1 runtime).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf/reader.h"
#include "offline/quantize_test_util.h"

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

// A mixture-of-experts file (a qwen3moe F32 model built in memory, quantized by `ridge quantize`):
// inspect tells total from active parameters and bytes, the roofline predicts the experts read.
TEST_F(SynthInspect, InspectAndRooflineOfAMixtureOfExpertsFile) {
  const ridge::model::ModelConfig cfg = ridge::offline::quantize_testing::wide_moe_config("qwen3moe");
  const auto s = ridge::offline::quantize_testing::synth_moe_f32(cfg, 3);
  ASSERT_TRUE(s.file);
  std::ofstream(path("moe-f32.gguf"), std::ios::binary)
      .write(reinterpret_cast<const char*>(s.bytes->data()), static_cast<std::streamsize>(s.bytes->size()));
  CmdResult q = run("quantize " + path("moe-f32.gguf") + " " + path("moe.gguf") + " q4_k_m");
  ASSERT_EQ(q.code, 0) << q.out;
  CmdResult r = run("inspect --json " + path("moe.gguf") + " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["n_expert"], 8);
  EXPECT_EQ(j["config"]["n_expert_used"], 2);
  const auto& c = j["cost"];
  // 4 layers of 8 experts of 3 x 256 x 256: 6 idle experts per layer per token.
  const double expert = 3.0 * 256 * 256;
  EXPECT_DOUBLE_EQ(c["n_params"].get<double>() - c["n_active_params"].get<double>(), 4 * 6 * expert);
  auto f = ridge::gguf::File::open(path("moe.gguf"));
  ASSERT_TRUE(f.ok());
  double stacks = 0, total = 0;
  for (const auto& t : f->tensors()) {
    total += static_cast<double>(t.n_bytes);
    if (t.name.find("_exps.") != std::string::npos) stacks += static_cast<double>(t.n_bytes);
  }
  EXPECT_DOUBLE_EQ(c["weight_bytes"].get<double>(), total);
  EXPECT_DOUBLE_EQ(c["active_weight_bytes"].get<double>(), total - stacks * 6 / 8);
  CmdResult text = run("inspect " + path("moe.gguf"));
  ASSERT_EQ(text.code, 0);
  EXPECT_NE(text.out.find(" active (2 of 8 experts per token)"), std::string::npos) << text.out;

  CmdResult rf = run("roofline " + path("moe.gguf") + " --hw h100 --ctx 256 --batch 1,4 --json 2>/dev/null");
  ASSERT_EQ(rf.code, 0) << rf.out;
  auto rj = nlohmann::json::parse(rf.out);
  const auto& res = rj["results"][0];
  EXPECT_EQ(res["moe"]["n_expert"], 8);
  EXPECT_DOUBLE_EQ(res["decode"][0]["experts_per_layer"].get<double>(), 2.0);
  EXPECT_NEAR(res["decode"][1]["experts_per_layer"].get<double>(), 8 * (1 - std::pow(0.75, 4)), 1e-9);
  EXPECT_GT(res["decode"][1]["cost"]["weight_bytes"].get<double>(), res["decode"][0]["cost"]["weight_bytes"].get<double>());
}

// A preset: `ridge roofline --preset` shows the experts read and where the MoE stops being cheaper.
// Sliding windows and soft-capping are shown, read back from the file's metadata (tiny-gemma2:
// a window of 8 on the even layers of 4, scores capped at 2, logits at 30).
TEST_F(SynthInspect, InspectShowsWindowsAndSoftcaps) {
  ASSERT_EQ(run("synth --preset tiny-gemma2 --type f16 -o " + path("g2.gguf")).code, 0);
  CmdResult r = run("inspect --json " + path("g2.gguf") + " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["sliding_window"], 8);
  EXPECT_EQ(j["config"]["sliding_window_layers"], 2);
  EXPECT_DOUBLE_EQ(j["config"]["attn_logit_softcap"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["config"]["final_logit_softcap"].get<double>(), 30.0);
  CmdResult text = run("inspect " + path("g2.gguf"));
  ASSERT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("sliding window 8 on 2 of 4 layers"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("soft-capping: attention scores 2, logits 30"), std::string::npos) << text.out;
}

// A Qwen3.5 file: the layer pattern and the recurrent state per sequence (6 linear layers of
// 3 x 128 conv values and 4 x 16 x 16 state values, f32), KV for the 2 attention layers only;
// the roofline of the 9B shape shows the state and counts it in the memory fit.
TEST_F(SynthInspect, InspectAndRooflineOfAHybridModel) {
  ASSERT_EQ(run("synth --preset tiny-qwen35 --type f16 -o " + path("q35.gguf")).code, 0);
  CmdResult r = run("inspect --json " + path("q35.gguf") + " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["linear_attention_layers"], 6);
  EXPECT_DOUBLE_EQ(j["cost"]["state_bytes_per_sequence"].get<double>(), 6.0 * (3 * 128 + 4 * 16 * 16) * 4);
  EXPECT_DOUBLE_EQ(j["cost"]["kv_bytes_per_token"]["f16"].get<double>(), 2.0 * 2 * 64 * 2);
  CmdResult text = run("inspect " + path("q35.gguf"));
  ASSERT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("Gated DeltaNet on 6 of 8 layers (full attention every 4th): 2 q/k and 4 v heads of 16"),
            std::string::npos) << text.out;
  CmdResult roof = run("roofline --preset qwen3.5-9b --type q4_k_m --hw h100 --ctx 4096 --batch 1");
  ASSERT_EQ(roof.code, 0) << roof.out;
  EXPECT_NE(roof.out.find("recurrent state 52.7 MB per sequence"), std::string::npos) << roof.out;
  EXPECT_NE(roof.out.find("weights + KV + state fit"), std::string::npos) << roof.out;
}

// A Gemma 4 file: the windowed layers' own KV heads and head size, the KV-sharing layers and the
// per-layer embeddings; KV per token counts the five layers that keep KV, each in its own shape
// (windowed 0, 1, 3: 2 heads of 32; global 2, 4: 1 head of 64; K and V, 2 bytes).
TEST_F(SynthInspect, InspectShowsGemma4sPerLayerShapes) {
  ASSERT_EQ(run("synth --preset tiny-gemma4 --type f16 -o " + path("g4.gguf")).code, 0);
  CmdResult r = run("inspect --json " + path("g4.gguf") + " 2>/dev/null");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["head_dim_swa"], 32);
  EXPECT_EQ(j["config"]["n_head_kv_swa"], 2);
  EXPECT_EQ(j["config"]["kv_shared_layers"], 2);
  EXPECT_EQ(j["config"]["embd_per_layer"], 32);
  EXPECT_DOUBLE_EQ(j["cost"]["kv_bytes_per_token"]["f16"].get<double>(), (3.0 * 2 * 32 + 2.0 * 1 * 64) * 2 * 2);
  CmdResult text = run("inspect " + path("g4.gguf"));
  ASSERT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("sliding window 8 on 4 of 7 layers (rope base 10000, kv 2, dim 32)"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("the last 2 layers read earlier layers' KV; per-layer embeddings of 32"),
            std::string::npos) << text.out;
}

TEST_F(SynthInspect, RooflineOfAnMoePreset) {
  CmdResult r = run("roofline --preset qwen3-30b-a3b --type q4_k_m --hw h100 --batch 1,8,32");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("experts: 8 of 128 per token"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stops being cheaper in weight reads at batch 35"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x dense"), std::string::npos) << r.out;
  CmdResult both = run("roofline qwen3-8b --preset qwen3-30b-a3b");
  EXPECT_EQ(both.code, 2) << both.out;
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

// ridge inspect on a checkpoint folder: its config essentials and safetensors tensors (a file
// laid out by hand: header length, JSON header, data); a folder without weights is one line.
TEST_F(SynthInspect, InspectsACheckpointFolder) {
  const std::string header =
      R"({"model.embed_tokens.weight":{"dtype":"BF16","shape":[4,2],"data_offsets":[0,16]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header + std::string(16, '\x01');
  std::ofstream(path("model.safetensors"), std::ios::binary) << bytes;
  std::ofstream(path("config.json")) << R"({"model_type":"qwen3","hidden_size":2,"unrelated":1})";
  const CmdResult r = run("inspect --json " + dir_.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["model_type"], "qwen3");
  EXPECT_FALSE(j["config"].contains("unrelated"));
  ASSERT_EQ(j["tensors"].size(), 1u);
  EXPECT_EQ(j["tensors"][0]["name"], "model.embed_tokens.weight");
  EXPECT_EQ(j["tensors"][0]["shape"], nlohmann::json::array({4, 2}));
  EXPECT_EQ(j["by_dtype"]["BF16"]["bytes"], 16);
  const CmdResult text = run("inspect " + dir_.string());
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("1 tensors"), std::string::npos) << text.out;
  std::filesystem::remove(path("model.safetensors"));
  const CmdResult none = run("inspect " + dir_.string());
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.out.find("no model.safetensors"), std::string::npos) << none.out;
  EXPECT_EQ(std::count(none.out.begin(), none.out.end(), '\n'), 1) << none.out;
}

}  // namespace
