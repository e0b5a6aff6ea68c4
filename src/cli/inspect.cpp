// ridge inspect: what a GGUF file holds and what it costs to run.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/inspect_checkpoint.h"
#include "gguf/reader.h"
#include "model/config.h"
#include "model/cost.h"

namespace ridge::cli {
namespace {

using nlohmann::json;

// "blk.12.attn_q.weight" -> "attn_q.weight": the tensor's role, layer stripped.
std::string role_of(const std::string& name) {
  if (name.rfind("blk.", 0) == 0) {
    auto dot = name.find('.', 4);
    if (dot != std::string::npos) return name.substr(dot + 1);
  }
  return name;
}

json tokenizer_summary(const gguf::File& f) {
  json t = json::object();
  if (!f.has("tokenizer.ggml.model")) return t;
  t["model"] = f.get_string_or("tokenizer.ggml.model", "").value_or("");
  t["pre"] = f.get_string_or("tokenizer.ggml.pre", "").value_or("");
  auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  t["n_tokens"] = tokens.ok() ? tokens->size() : 0;
  if (const auto* m = f.find("tokenizer.ggml.merges"); m && m->as_array()) t["n_merges"] = m->as_array()->items.size();
  for (const char* k : {"bos", "eos", "eot", "unknown", "padding"}) {
    auto id = f.get_int_or(fmt::format("tokenizer.ggml.{}_token_id", k), -1).value_or(-1);
    if (id >= 0 && tokens.ok() && static_cast<size_t>(id) < tokens->size()) {
      t[std::string(k)] = {{"id", id}, {"text", (*tokens)[static_cast<size_t>(id)]}};
    }
  }
  t["add_bos"] = f.get_bool_or("tokenizer.ggml.add_bos_token", false).value_or(false);
  t["has_chat_template"] = f.has("tokenizer.chat_template");
  return t;
}

json cost_summary(const model::ModelCost& c) {
  json j;
  j["n_params"] = c.n_params;
  j["weight_bytes"] = c.weight_file_bytes;
  j["weight_bytes_read_per_token"] = c.weight_read_bytes + c.embd_row_bytes;
  j["flops_per_token_ctx1"] = c.flops_per_token(1);
  j["flops_per_token_ctx4096"] = c.flops_per_token(4096);
  json kv = json::object();
  for (auto t : {kv::KvType::kF32, kv::KvType::kF16, kv::KvType::kBF16, kv::KvType::kQ8_0}) {
    kv[std::string(kv::kv_type_name(t))] =
        c.kv_bytes_per_token / kv::kv_bytes_per_element(c.kv_type) * kv::kv_bytes_per_element(t);
  }
  j["kv_bytes_per_token"] = kv;
  if (c.state_bytes_per_seq > 0) j["state_bytes_per_sequence"] = c.state_bytes_per_seq;
  if (c.is_moe()) {  // total (every expert) against active (what one token uses)
    j["n_expert"] = c.config.n_expert;
    j["n_expert_used"] = c.config.n_expert_used;
    j["n_active_params"] = c.n_active_params;
    j["active_weight_bytes"] = c.active_weight_bytes;
    j["expert_bytes_all_layers"] = c.expert_bytes_all_layers;
  }
  return j;
}

std::string params_str(double n) {
  return n >= 1e9 ? fmt::format("{:.3f} B", n / 1e9) : fmt::format("{:.3f} M", n / 1e6);
}

json build_report(const gguf::File& f, std::string* cost_error) {
  json r;
  r["file"] = f.path();
  r["gguf_version"] = f.version();
  r["file_bytes"] = f.file_size();
  r["alignment"] = f.alignment();
  r["architecture"] = f.architecture();
  json md = json::object();
  for (const auto& [k, v] : f.metadata()) {
    if (k.rfind("tokenizer.ggml.", 0) == 0 && v.as_array()) continue;  // summarised below
    md[k] = v.to_display(8);
  }
  r["metadata"] = md;
  r["tokenizer"] = tokenizer_summary(f);
  json tensors = json::array();
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_type, by_role;  // count, bytes
  for (const auto& t : f.tensors()) {
    tensors.push_back({{"name", t.name}, {"type", std::string(ggml_type_name(t.type))}, {"shape", t.shape},
                       {"bytes", t.n_bytes}});
    auto& ty = by_type[std::string(ggml_type_name(t.type))];
    ty.first++;
    ty.second += t.n_bytes;
    auto& ro = by_role[role_of(t.name)];
    ro.first++;
    ro.second += t.n_bytes;
  }
  r["tensors"] = tensors;
  for (const auto& [k, v] : by_type) r["totals_by_type"][k] = {{"count", v.first}, {"bytes", v.second}};
  for (const auto& [k, v] : by_role) r["totals_by_role"][k] = {{"count", v.first}, {"bytes", v.second}};

  auto cfg = model::config_from_gguf(f);
  if (!cfg.ok()) {
    *cost_error = cfg.status().message();
    return r;
  }
  const auto& c = *cfg;
  r["config"] = {{"arch", c.arch},         {"n_vocab", c.n_vocab},   {"n_embd", c.n_embd},
                 {"n_layer", c.n_layer},   {"n_head", c.n_head},     {"n_head_kv", c.n_head_kv},
                 {"head_dim", c.head_dim}, {"n_ff", c.n_ff},         {"n_ctx_train", c.n_ctx_train},
                 {"rms_eps", c.rms_eps},   {"rope_theta", c.rope_theta}, {"rope_dims", c.rope_dims},
                 {"rope_layout", c.rope_layout == model::RopeLayout::kNeox ? "neox" : "normal"},
                 {"tied_embeddings", c.tied_embeddings}, {"qkv_bias", c.qkv_bias}, {"qk_norm", c.qk_norm}};
  if (c.is_moe()) {
    r["config"]["n_expert"] = c.n_expert;
    r["config"]["n_expert_used"] = c.n_expert_used;
    r["config"]["n_ff_exp"] = c.n_ff_exp;
    r["config"]["n_ff_shexp"] = c.n_ff_shexp;
  }
  if (c.n_swa > 0) {
    r["config"]["sliding_window"] = c.n_swa;
    r["config"]["sliding_window_layers"] = c.n_swa_layers();
    r["config"]["rope_theta_swa"] = c.rope_theta_swa > 0.0f ? c.rope_theta_swa : c.rope_theta;
  }
  if (c.n_recurrent_layers() > 0) {
    r["config"]["linear_attention_layers"] = c.n_recurrent_layers();
    r["config"]["full_attention_interval"] = c.full_attn_interval;
    r["config"]["ssm_heads"] = {{"k", c.ssm_n_k_heads}, {"v", c.ssm_n_v_heads}};
    r["config"]["ssm_head_dim"] = c.ssm_head_dim;
    r["config"]["ssm_conv_kernel"] = c.ssm_conv_kernel;
    if (c.n_nextn_layers > 0) {
      r["config"]["mtp_layers"] = c.n_nextn_layers;
      // The draft head (--spec mtp) needs the first block's tensors (--no-mtp files lack them).
      r["config"]["mtp_head"] = f.find_tensor(fmt::format("blk.{}.nextn.eh_proj.weight", c.n_layer)) != nullptr;
    }
  }
  if (c.head_dim_swa > 0 || c.n_head_kv_swa > 0) {  // gemma4: windowed layers of their own shape
    r["config"]["head_dim_swa"] = c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim;
    r["config"]["n_head_kv_swa"] = c.n_head_kv_swa > 0 ? c.n_head_kv_swa : c.n_head_kv;
  }
  if (c.n_kv_shared_layers > 0) r["config"]["kv_shared_layers"] = c.n_kv_shared_layers;
  if (c.n_embd_per_layer > 0) r["config"]["embd_per_layer"] = c.n_embd_per_layer;
  if (c.attn_softcap > 0.0f) r["config"]["attn_logit_softcap"] = c.attn_softcap;
  if (c.final_logit_softcap > 0.0f) r["config"]["final_logit_softcap"] = c.final_logit_softcap;
  auto types = model::weight_types_from_gguf(f);
  if (!types.ok()) {
    *cost_error = types.status().message();
    return r;
  }
  auto cost = model::model_cost(c, *types, kv::KvType::kF16);
  if (!cost.ok()) {
    *cost_error = cost.status().message();
    return r;
  }
  r["cost"] = cost_summary(*cost);
  return r;
}

void print_text(const json& r, const std::string& cost_error) {
  fmt::print("file          {}  (GGUF v{}, {}, alignment {})\n", r["file"].get<std::string>(), r["gguf_version"].get<int>(),
             human_bytes(r["file_bytes"].get<double>()), r["alignment"].get<int>());
  fmt::print("architecture  {}\n", r["architecture"].get<std::string>());
  if (r.contains("config")) {
    const auto& c = r["config"];
    fmt::print("shape         {} layers, embd {}, heads {} (kv {}, dim {}), ff {}, vocab {}, ctx {}\n",
               c["n_layer"].get<int64_t>(), c["n_embd"].get<int64_t>(), c["n_head"].get<int64_t>(),
               c["n_head_kv"].get<int64_t>(), c["head_dim"].get<int64_t>(), c["n_ff"].get<int64_t>(),
               c["n_vocab"].get<int64_t>(), c["n_ctx_train"].get<int64_t>());
    fmt::print("              rope {} base {} dims {}, rms eps {}, tied output {}, qkv bias {}, qk norm {}\n",
               c["rope_layout"].get<std::string>(), c["rope_theta"].get<double>(), c["rope_dims"].get<int64_t>(),
               c["rms_eps"].get<double>(), c["tied_embeddings"].get<bool>(), c["qkv_bias"].get<bool>(),
               c["qk_norm"].get<bool>());
    if (c.contains("sliding_window")) {
      fmt::print("              sliding window {} on {} of {} layers (rope base {}{})\n",
                 c["sliding_window"].get<int64_t>(), c["sliding_window_layers"].get<int64_t>(),
                 c["n_layer"].get<int64_t>(), c["rope_theta_swa"].get<double>(),
                 c.contains("head_dim_swa") ? fmt::format(", kv {}, dim {}", c["n_head_kv_swa"].get<int64_t>(),
                                                          c["head_dim_swa"].get<int64_t>())
                                            : "");
    }
    if (c.contains("kv_shared_layers") || c.contains("embd_per_layer")) {
      fmt::print("              the last {} layers read earlier layers' KV; per-layer embeddings of {}\n",
                 c.value("kv_shared_layers", int64_t{0}), c.value("embd_per_layer", int64_t{0}));
    }
    if (c.contains("linear_attention_layers")) {
      fmt::print("              Gated DeltaNet on {} of {} layers (full attention every {}th): {} q/k and {} v "
                 "heads of {}, conv {}{}\n",
                 c["linear_attention_layers"].get<int64_t>(), c["n_layer"].get<int64_t>(),
                 c["full_attention_interval"].get<int64_t>(), c["ssm_heads"]["k"].get<int64_t>(),
                 c["ssm_heads"]["v"].get<int64_t>(), c["ssm_head_dim"].get<int64_t>(),
                 c["ssm_conv_kernel"].get<int64_t>(),
                 !c.contains("mtp_layers") ? ""
                 : c["mtp_head"].get<bool>() ? fmt::format("; {} MTP block(s): a draft head for --spec mtp", c["mtp_layers"].get<int64_t>())
                                             : fmt::format("; {} MTP block(s) declared, their tensors absent", c["mtp_layers"].get<int64_t>()));
    }
    if (c.contains("attn_logit_softcap") || c.contains("final_logit_softcap")) {
      fmt::print("              soft-capping: attention scores {}, logits {}\n", c.value("attn_logit_softcap", 0.0),
                 c.value("final_logit_softcap", 0.0));
    }
    if (c.contains("n_expert")) {
      fmt::print("              experts {} ({} per token) of ff {}, shared expert ff {}\n", c["n_expert"].get<int64_t>(),
                 c["n_expert_used"].get<int64_t>(), c["n_ff_exp"].get<int64_t>(), c["n_ff_shexp"].get<int64_t>());
    }
  }
  const auto& t = r["tokenizer"];
  if (!t.empty()) {
    fmt::print("tokenizer     {} (pre {}), {} tokens", t["model"].get<std::string>(), t["pre"].get<std::string>(),
               t["n_tokens"].get<int64_t>());
    if (t.contains("n_merges")) fmt::print(", {} merges", t["n_merges"].get<int64_t>());
    for (const char* k : {"bos", "eos", "eot"}) {
      if (t.contains(k)) fmt::print(", {} {} {}", k, t[k]["id"].get<int64_t>(), t[k]["text"].get<std::string>());
    }
    fmt::print(", add_bos {}, chat template {}\n", t["add_bos"].get<bool>(), t["has_chat_template"].get<bool>() ? "yes" : "no");
  }
  if (r.contains("cost")) {
    const auto& c = r["cost"];
    const double n_params = c["n_params"].get<double>();
    if (c.contains("n_active_params")) {
      fmt::print("\nparameters    {} total, {} active ({} of {} experts per token)\n", params_str(n_params),
                 params_str(c["n_active_params"].get<double>()), c["n_expert_used"].get<int64_t>(),
                 c["n_expert"].get<int64_t>());
      fmt::print("weights       {} total, {} active; one expert in every layer {}\n",
                 human_bytes(c["weight_bytes"].get<double>()), human_bytes(c["active_weight_bytes"].get<double>()),
                 human_bytes(c["expert_bytes_all_layers"].get<double>()));
    } else {
      fmt::print("\nparameters    {}   weights {}\n", params_str(n_params), human_bytes(c["weight_bytes"].get<double>()));
    }
    fmt::print("per decoded token{}: reads {} of weights, {:.2f} GFLOP at context 1, {:.2f} GFLOP at 4096\n",
               c.contains("n_active_params") ? " (one sequence; a batch reads more experts)" : "",
               human_bytes(c["weight_bytes_read_per_token"].get<double>()),
               c["flops_per_token_ctx1"].get<double>() / 1e9, c["flops_per_token_ctx4096"].get<double>() / 1e9);
    fmt::print("KV cache per token of context:");
    for (const auto& [k, v] : c["kv_bytes_per_token"].items()) fmt::print("  {} {}", k, human_bytes(v.get<double>()));
    fmt::print("\n");
    if (c.contains("state_bytes_per_sequence")) {
      fmt::print("recurrent state per sequence (f32, any context): {}\n",
                 human_bytes(c["state_bytes_per_sequence"].get<double>()));
    }
  } else if (!cost_error.empty()) {
    fmt::print("\n(no cost figures: {})\n", cost_error);
  }
  fmt::print("\n{:<44} {:<8} {:<22} {:>12}\n", "tensor", "type", "shape", "bytes");
  for (const auto& x : r["tensors"]) {
    std::vector<uint64_t> shape = x["shape"];
    fmt::print("{:<44} {:<8} {:<22} {:>12}\n", x["name"].get<std::string>(), x["type"].get<std::string>(),
               shape_str(shape), x["bytes"].get<uint64_t>());
  }
  if (r.contains("totals_by_type")) {
    fmt::print("\ntotals by type:\n");
    for (const auto& [k, v] : r["totals_by_type"].items()) {
      fmt::print("  {:<10} {:>5} tensors  {:>12}\n", k, v["count"].get<int64_t>(), human_bytes(v["bytes"].get<double>()));
    }
    fmt::print("totals by role:\n");
    for (const auto& [k, v] : r["totals_by_role"].items()) {
      fmt::print("  {:<24} {:>5} tensors  {:>12}\n", k, v["count"].get<int64_t>(), human_bytes(v["bytes"].get<double>()));
    }
  }
  fmt::print("\nmetadata:\n");
  for (const auto& [k, v] : r["metadata"].items()) fmt::print("  {} = {}\n", k, v.get<std::string>());
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  CLI::App app("Show a GGUF file (hyper-parameters, tokenizer, tensors and the figures the roofline needs) "
                "or a Hugging Face checkpoint folder (its config and safetensors tensors).", "inspect");
  std::string path;
  bool as_json = false;
  app.add_option("file", path, "GGUF file, or a checkpoint folder")->required();
  app.add_flag("--json", as_json, "print JSON");
  if (auto rc = parse(app, argc, argv)) return *rc;
  if (std::filesystem::is_directory(path)) return inspect_checkpoint(path, as_json);
  auto f = gguf::File::open(path);
  if (!f.ok()) return report(f.status());
  std::string cost_error;
  json r = build_report(*f, &cost_error);
  if (!cost_error.empty()) r["cost_error"] = cost_error;
  if (as_json) {
    fmt::print("{}\n", r.dump(2));
  } else {
    print_text(r, cost_error);
  }
  return 0;
}

}  // namespace ridge::cli
