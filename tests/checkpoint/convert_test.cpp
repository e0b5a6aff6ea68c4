// ridge's checkpoint conversion against the GGUF a checkpoint came from: a synthetic GGUF of each
// architecture is written out as a Hugging Face folder by this test (Hugging Face's tensor names,
// config.json fields and query/key row order, typed here from those conventions, not taken from
// the converter), converted back, and must give the same tensors byte for byte, the same
// configuration and the same logits.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/hf_convert.h"
#include "checkpoint/safetensors.h"
#include "engine/session.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "model/model.h"
#include "model/test_util.h"

namespace ridge::checkpoint {
namespace convert_test {

using json = nlohmann::json;

const char* hf_architecture(const std::string& arch) {
  if (arch == "llama") return "LlamaForCausalLM";
  if (arch == "qwen2") return "Qwen2ForCausalLM";
  return "Qwen3ForCausalLM";
}

// The Hugging Face name of a GGUF tensor.
std::string hf_name(const std::string& g) {
  if (g == "token_embd.weight") return "model.embed_tokens.weight";
  if (g == "output_norm.weight") return "model.norm.weight";
  if (g == "output.weight") return "lm_head.weight";
  const size_t dot = g.find('.', 4);
  const std::string layer = g.substr(4, dot - 4), rest = g.substr(dot + 1);
  static const std::map<std::string, std::string> names = {
      {"attn_norm.weight", "input_layernorm.weight"}, {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},   {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},       {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"}, {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},        {"ffn_down.weight", "mlp.down_proj.weight"}};
  return "model.layers." + layer + "." + names.at(rest);
}

// Hugging Face's query/key row order from llama.cpp's: in each head, GGUF row 2 i + j holds what
// Hugging Face keeps at row j * head_dim / 2 + i (rotate_half pairs halves, ggml adjacent values).
std::vector<uint8_t> to_hf_rows(std::span<const uint8_t> d, int64_t n_head, int64_t hd, size_t row_bytes) {
  std::vector<uint8_t> out(d.size());
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t r = 0; r < hd; ++r) {
      const int64_t i = r / 2, j = r % 2;
      std::memcpy(out.data() + (h * hd + j * hd / 2 + i) * row_bytes, d.data() + (h * hd + r) * row_bytes, row_bytes);
    }
  }
  return out;
}

const char* dtype_of(GgmlType t) {
  return t == GgmlType::kF32 ? "F32" : t == GgmlType::kF16 ? "F16" : "BF16";
}

void write_safetensors(const std::filesystem::path& p, const std::vector<std::pair<std::string, std::pair<json, std::vector<uint8_t>>>>& ts) {
  json header = json::object();
  std::vector<uint8_t> data;
  for (const auto& [name, entry] : ts) {
    json e = entry.first;
    e["data_offsets"] = {data.size(), data.size() + entry.second.size()};
    header[name] = e;
    data.insert(data.end(), entry.second.begin(), entry.second.end());
  }
  const std::string h = header.dump();
  std::ofstream out(p, std::ios::binary);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((h.size() >> (8 * i)) & 0xff));
  out << h;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// Writes `f` (a synthetic GGUF of cfg) as a checkpoint folder; shards > 1 splits its tensors
// over that many files with an index.
void write_checkpoint(const gguf::File& f, const model::ModelConfig& cfg, const std::filesystem::path& dir, int shards) {
  std::filesystem::create_directories(dir);
  const bool tied = f.find_tensor("output.weight") == nullptr;
  json config = {{"architectures", {hf_architecture(cfg.arch)}}, {"hidden_size", cfg.n_embd},
                 {"intermediate_size", cfg.n_ff}, {"num_hidden_layers", cfg.n_layer},
                 {"num_attention_heads", cfg.n_head}, {"num_key_value_heads", cfg.n_head_kv},
                 {"head_dim", cfg.head_dim}, {"vocab_size", cfg.n_vocab},
                 {"max_position_embeddings", cfg.n_ctx_train}, {"rope_theta", cfg.rope_theta},
                 {"rms_norm_eps", cfg.rms_eps}, {"tie_word_embeddings", tied}, {"rope_scaling", nullptr}};
  std::ofstream(dir / "config.json") << config.dump(2);
  std::vector<std::vector<std::pair<std::string, std::pair<json, std::vector<uint8_t>>>>> files(static_cast<size_t>(shards));
  json weight_map = json::object();
  size_t k = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::span<const uint8_t> bytes(t.data, t.n_bytes);
    std::vector<uint8_t> data(bytes.begin(), bytes.end());
    const bool q = t.name.find("attn_q.") != std::string::npos, kk = t.name.find("attn_k.") != std::string::npos;
    if (cfg.arch == "llama" && (q || kk)) {
      data = to_hf_rows(bytes, q ? cfg.n_head : cfg.n_head_kv, cfg.head_dim, t.n_bytes / t.shape.back());
    }
    std::vector<int64_t> shape(t.shape.rbegin(), t.shape.rend());
    const size_t file = k++ % static_cast<size_t>(shards);
    const std::string name = hf_name(t.name);
    files[file].push_back({name, {json{{"dtype", dtype_of(t.type)}, {"shape", shape}}, data}});
    weight_map[name] = "model-0000" + std::to_string(file + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
  }
  if (shards == 1) {
    write_safetensors(dir / "model.safetensors", files[0]);
    return;
  }
  for (int s = 0; s < shards; ++s) {
    write_safetensors(dir / ("model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(shards) + ".safetensors"),
                      files[static_cast<size_t>(s)]);
  }
  std::ofstream(dir / "model.safetensors.index.json") << json{{"weight_map", weight_map}}.dump();
}

std::vector<float> logits_of(const model::Model& m) {
  engine::SessionOptions o;
  o.n_ctx = 16;
  o.max_outputs = 6;
  auto s = engine::Session::create(m, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  const std::vector<int32_t> tokens = {1, 7, 30, 2, 99, 5};
  auto r = s->eval(tokens, /*all_logits=*/true);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::vector<float>(r->begin(), r->end()) : std::vector<float>{};
}

struct Case {
  const char* preset;
  const char* type;
  int shards;
};

class ConvertRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(ConvertRoundTrip, SameTensorsConfigAndLogits) {
  const Case c = GetParam();
  gguf::Writer synth;
  ASSERT_TRUE(model::testing::build_synthetic(c.preset, c.type, 11, synth).ok());
  auto image = synth.write_to_memory();
  ASSERT_TRUE(image.ok());
  auto original = gguf::File::parse(*image, "original.gguf");
  ASSERT_TRUE(original.ok());
  auto cfg = model::config_from_gguf(*original);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
      ("ridge-convert-" + std::to_string(::getpid()) + "-" + c.preset + "-" + c.type);
  std::filesystem::remove_all(dir);
  write_checkpoint(*original, *cfg, dir, c.shards);

  std::ifstream in(dir / "config.json");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  auto hf = parse_hf_config(text);
  ASSERT_TRUE(hf.ok()) << hf.status().message();
  auto set = SafetensorsSet::open_dir(dir.string());
  ASSERT_TRUE(set.ok()) << set.status().message();
  gguf::Writer out;
  const Status st = convert_checkpoint(*hf, *set, out);
  ASSERT_TRUE(st.ok()) << st.message();
  auto bytes = out.write_to_memory();
  ASSERT_TRUE(bytes.ok());
  std::filesystem::remove_all(dir);
  auto converted = gguf::File::parse(*bytes, "converted.gguf");
  ASSERT_TRUE(converted.ok()) << converted.status().message();

  ASSERT_EQ(converted->tensors().size(), original->tensors().size());
  for (const gguf::TensorInfo& t : original->tensors()) {
    const gguf::TensorInfo* u = converted->find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->type, t.type) << t.name;
    EXPECT_EQ(u->shape, t.shape) << t.name;
    ASSERT_EQ(u->n_bytes, t.n_bytes) << t.name;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.n_bytes), 0) << t.name << " differs";
  }
  auto cfg2 = model::config_from_gguf(*converted);
  ASSERT_TRUE(cfg2.ok()) << cfg2.status().message();
  EXPECT_EQ(cfg2->arch, cfg->arch);
  EXPECT_EQ(cfg2->n_embd, cfg->n_embd);
  EXPECT_EQ(cfg2->n_layer, cfg->n_layer);
  EXPECT_EQ(cfg2->n_head_kv, cfg->n_head_kv);
  EXPECT_EQ(cfg2->head_dim, cfg->head_dim);
  EXPECT_EQ(cfg2->rope_theta, cfg->rope_theta);
  EXPECT_EQ(cfg2->rms_eps, cfg->rms_eps);
  EXPECT_EQ(cfg2->n_ctx_train, cfg->n_ctx_train);

  const kernels::Kernels& k = kernels::kernels_for(kernels::best_isa());
  auto m1 = model::Model::from_file(std::make_shared<const gguf::File>(std::move(*original)), k);
  auto m2 = model::Model::from_file(std::make_shared<const gguf::File>(std::move(*converted)), k);
  ASSERT_TRUE(m1.ok() && m2.ok());
  const std::vector<float> a = logits_of(*m1), b = logits_of(*m2);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Architectures, ConvertRoundTrip,
                         ::testing::Values(Case{"tiny-llama", "f32", 1}, Case{"tiny-llama", "bf16", 2},
                                           Case{"tiny-qwen2", "f16", 1}, Case{"tiny-qwen3", "bf16", 3},
                                           Case{"tiny-qwen3", "f32", 1}),
                         [](const auto& p) {
                           std::string s = std::string(p.param.preset) + "_" + p.param.type + "_" +
                                           std::to_string(p.param.shards);
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s;
                         });

TEST(HfConfig, RefusesWhatConvertCannotHonour) {
  EXPECT_NE(parse_hf_config("[]").status().message().find("not a JSON object"), std::string::npos);
  EXPECT_NE(parse_hf_config(R"({"architectures":["GPTNeoXForCausalLM"]})").status().message().find("GPTNeoX"),
            std::string::npos);
  const std::string base = R"("architectures":["Qwen3ForCausalLM"],"hidden_size":64,"intermediate_size":128,)"
                           R"("num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100)";
  EXPECT_TRUE(parse_hf_config("{" + base + "}").ok());
  EXPECT_NE(parse_hf_config(R"({"architectures":["Qwen3ForCausalLM"],"hidden_size":64})").status().message().find(
                "intermediate_size"), std::string::npos);
  EXPECT_NE(parse_hf_config("{" + base + R"(,"num_key_value_heads":3})").status().message().find("multiple"),
            std::string::npos);
  EXPECT_NE(parse_hf_config("{" + base + R"(,"rope_scaling":{"rope_type":"llama3","factor":8}})").status().message().find(
                "llama3"), std::string::npos);
  EXPECT_NE(parse_hf_config("{" + base + R"(,"hidden_size":-1})").status().message().find("hidden_size"),
            std::string::npos);
}

TEST(HfConfig, NamesEachTensorOrRefusesIt) {
  auto c = parse_hf_config(R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":128,)"
                           R"("num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*gguf_tensor_name(*c, "model.layers.1.mlp.down_proj.weight"), "blk.1.ffn_down.weight");
  EXPECT_FALSE(gguf_tensor_name(*c, "model.layers.2.mlp.down_proj.weight").ok());  // past num_hidden_layers
  EXPECT_FALSE(gguf_tensor_name(*c, "model.layers.0.mlp.experts.0.w1.weight").ok());
  EXPECT_FALSE(gguf_tensor_name(*c, "vision_tower.x").ok());
}

}  // namespace convert_test
}  // namespace ridge::checkpoint
