// ridge batch: run a JSONL file of requests through the continuous-batching engine (offline
// inference) and report throughput, TTFT/latency/inter-token percentiles, prefix-cache hit rate
// and preemptions. Each line: {"prompt": "..." | "tokens": [...], "max_tokens": N,
// "temperature": T, ..., "arrival": seconds-after-start, "prediction": "expected output" |
// "prediction_tokens": [...]}; or
// "messages" (+ "tools", "chat_template_kwargs") rendered with the model's chat template, whose
// results then carry content, reasoning_content and tool_calls as the server's would.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>

#include "base/timer.h"
#include "chat/chat_template.h"
#include "chat/output_parser.h"
#include "cli/chat_options.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/engine_spec.h"
#include "engine/engine.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {
namespace {

using nlohmann::json;

struct BatchArgs {
  std::string model_path, prompts_path, out_path, kv_size, kv_type = "f16", isa;
  engine::EngineOptions engine;
  EngineSpecArgs spec;
  bool ignore_eos = false;
  bool quiet = false;
  gguf::Backing backing = gguf::Backing::kHugePages;
  ChatTemplateArgs chat;
};

struct Item {
  engine::Request req;
  double arrival = 0;
  json extra;  // "id" echoed into the results
  std::string prediction;                  // "prediction": the expected output (drafts only)
  std::optional<chat::Conversation> chat;  // "messages": rendered with the chat template
  chat::ParserOptions parse;               // how its output splits (chat items)
};

struct Outcome {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<double> token_times;
  engine::FinishReason finish = engine::FinishReason::kNone;
  std::string error;
  engine::RequestStats stats;
  json logprobs = json::array();
};

Result<uint64_t> parse_size(const std::string& s) {
  if (s.empty()) return uint64_t{0};
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    return usage_error("batch: --kv-size '{}' is not a size (e.g. 512M, 2G)", s);
  }
  const std::string unit = s.substr(used);
  double mult = 1 << 20;  // plain numbers are MiB
  if (unit == "K" || unit == "k" || unit == "KiB") mult = 1 << 10;
  else if (unit == "G" || unit == "g" || unit == "GiB") mult = 1 << 30;
  else if (!(unit.empty() || unit == "M" || unit == "m" || unit == "MiB")) {
    return usage_error("batch: --kv-size '{}': unknown unit '{}' (K, M, G)", s, unit);
  }
  if (!(v > 0) || v * mult > 1e15) return usage_error("batch: --kv-size '{}' is out of range", s);
  return static_cast<uint64_t>(v * mult);
}

template <typename T>
Status get(const json& j, const char* key, T& out, size_t line) {
  if (!j.contains(key)) return ok_status();
  try {
    out = j.at(key).get<T>();
  } catch (const json::exception&) {
    return usage_error("batch: line {}: '{}' has the wrong type", line, key);
  }
  return ok_status();
}

Result<Item> parse_line(const std::string& text, size_t line, bool ignore_eos) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return usage_error("batch: line {}: not a JSON object", line);
  static const char* kKeys[] = {"prompt", "tokens", "max_tokens", "temperature", "top_k", "top_p", "min_p",
                                "seed", "stop", "repetition_penalty", "frequency_penalty", "presence_penalty",
                                "ignore_eos", "priority", "logprobs", "arrival", "id", "messages",
                                "tools", "chat_template_kwargs", "prediction", "prediction_tokens"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return it.key() == k; }) == std::end(kKeys)) {
      return usage_error("batch: line {}: unknown key '{}'", line, it.key());
    }
  }
  Item item;
  engine::Request& r = item.req;
  sampling::SamplingParams& p = r.params;
  r.ignore_eos = ignore_eos;
  RIDGE_RETURN_IF_ERROR(get(j, "prompt", r.prompt_text, line));
  RIDGE_RETURN_IF_ERROR(get(j, "tokens", r.prompt_tokens, line));
  RIDGE_RETURN_IF_ERROR(get(j, "max_tokens", p.max_tokens, line));
  RIDGE_RETURN_IF_ERROR(get(j, "temperature", p.temperature, line));
  RIDGE_RETURN_IF_ERROR(get(j, "top_k", p.top_k, line));
  RIDGE_RETURN_IF_ERROR(get(j, "top_p", p.top_p, line));
  RIDGE_RETURN_IF_ERROR(get(j, "min_p", p.min_p, line));
  RIDGE_RETURN_IF_ERROR(get(j, "seed", p.seed, line));
  RIDGE_RETURN_IF_ERROR(get(j, "repetition_penalty", p.repetition_penalty, line));
  RIDGE_RETURN_IF_ERROR(get(j, "frequency_penalty", p.frequency_penalty, line));
  RIDGE_RETURN_IF_ERROR(get(j, "presence_penalty", p.presence_penalty, line));
  RIDGE_RETURN_IF_ERROR(get(j, "ignore_eos", r.ignore_eos, line));
  RIDGE_RETURN_IF_ERROR(get(j, "priority", r.priority, line));
  RIDGE_RETURN_IF_ERROR(get(j, "logprobs", r.n_logprobs, line));
  RIDGE_RETURN_IF_ERROR(get(j, "arrival", item.arrival, line));
  RIDGE_RETURN_IF_ERROR(get(j, "prediction", item.prediction, line));
  RIDGE_RETURN_IF_ERROR(get(j, "prediction_tokens", r.prediction, line));
  if (!item.prediction.empty() && !r.prediction.empty()) {
    return usage_error("batch: line {}: 'prediction' and 'prediction_tokens' together", line);
  }
  if (j.contains("stop")) {
    if (j["stop"].is_string()) p.stop = {j["stop"].get<std::string>()};
    else RIDGE_RETURN_IF_ERROR(get(j, "stop", p.stop, line));
  }
  if (j.contains("id")) item.extra["id"] = j["id"];
  if (!(item.arrival >= 0 && item.arrival < 1e6)) return usage_error("batch: line {}: arrival {} is out of range", line, item.arrival);
  if (j.contains("messages")) {
    if (!j["messages"].is_array() || j["messages"].empty()) {
      return usage_error("batch: line {}: 'messages' must be a non-empty array", line);
    }
    chat::Conversation c;
    c.messages = j["messages"];
    if (j.contains("tools")) c.tools = j["tools"];
    if (j.contains("chat_template_kwargs")) {
      if (!j["chat_template_kwargs"].is_object()) {
        return usage_error("batch: line {}: 'chat_template_kwargs' must be an object", line);
      }
      c.kwargs = j["chat_template_kwargs"];
    }
    item.chat = std::move(c);
    if (!r.prompt_text.empty() || !r.prompt_tokens.empty()) {
      return usage_error("batch: line {}: give one of 'prompt', 'tokens' and 'messages'", line);
    }
    return item;
  }
  if (r.prompt_text.empty() == r.prompt_tokens.empty()) {
    return usage_error("batch: line {}: give exactly one of 'prompt' (non-empty) and 'tokens'", line);
  }
  return item;
}

Result<std::vector<Item>> read_prompts(const std::string& path, bool ignore_eos) {
  std::ifstream in(path);
  if (!in) return usage_error("batch: cannot open --prompts '{}'", path);
  std::vector<Item> items;
  std::string text;
  for (size_t line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    RIDGE_ASSIGN_OR_RETURN(Item item, parse_line(text, line, ignore_eos));
    items.push_back(std::move(item));
  }
  if (items.empty()) return usage_error("batch: '{}' holds no requests", path);
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.arrival < b.arrival; });
  return items;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto idx = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) ;
  return v[std::min(v.size() - 1, idx == 0 ? 0 : idx - 1)];
}

void add_flags(CLI::App& app, BatchArgs& a) {
  app.add_option("-m,--model", a.model_path, "GGUF model")->required();
  app.add_option("--prompts", a.prompts_path, "JSONL requests, one per line")->required();
  app.add_option("--out", a.out_path, "write one JSON result per request here");
  app.add_option("--max-seqs", a.engine.max_seqs, "running sequences at most")->capture_default_str();
  app.add_option("--max-batched-tokens", a.engine.max_batched_tokens, "tokens per step")->capture_default_str();
  // Offline throughput mode: no per-step prompt cap by default (it costs ~17% of throughput on
  // 64 mixed requests); `ridge serve` keeps the engine's latency-minded default.
  a.engine.max_prefill_with_decodes = 0;
  app.add_option("--max-prefill-with-decodes", a.engine.max_prefill_with_decodes,
                 "prompt tokens per step while others decode (0: no cap)")->capture_default_str();
  app.add_option("--max-model-len", a.engine.max_model_len, "prompt + completion per sequence (0: min(training context, 4096))");
  app.add_option("--kv-size", a.kv_size, "KV pool size, e.g. 512M, 2G (default: a quarter of free RAM, at most what max-seqs need)");
  app.add_option("--kv-type", a.kv_type, "KV cache type: f16, bf16, q8_0 (head_dim % 32 == 0) or f32")->capture_default_str();
  app.add_option("--block-size", a.engine.block_size, "KV block size in tokens")->capture_default_str();
  app.add_flag("--no-prefix-caching", [&a](int64_t) { a.engine.prefix_caching = false; }, "disable prefix caching");
  app.add_flag("--swa-full", a.engine.swa_full,
               "keep every position's K/V in the sliding-window layers too (default: only their window)");
  app.add_option("--state-cache", a.engine.state_cache,
                 "hybrid models: recurrent states kept for the prefix cache (-1: as many as --max-seqs; 0: none, prefix caching off)")
      ->check(CLI::Range(-1, 1 << 16))->capture_default_str();
  app.add_option("--state-snapshot-interval", a.engine.state_snapshot_interval,
                 "hybrid models: also keep the state every N prompt tokens for the prefix cache (whole blocks; 0: off)")
      ->check(CLI::Range(0, 1 << 24))->capture_default_str();
  app.add_flag("--ignore-eos", a.ignore_eos, "generate max_tokens whatever the model says (benchmarks)");
  app.add_option("-t,--threads", a.engine.n_threads, "compute threads")->capture_default_str();
  add_engine_spec_flags(app, a.spec, a.engine);
  app.add_option("--isa", a.isa, "force kernels: ref, avx2, avx512");
  add_mmap_flag(app, a.backing);
  app.add_flag("-q,--quiet", a.quiet, "no memory banner");
  add_chat_template_flags(app, a.chat);
}

// Renders the chat items' conversations into prompt tokens.
Status render_chats(std::vector<Item>& items, const gguf::File& file,
                    const tokenizer::Tokenizer& tok, ChatTemplateArgs& args) {
  std::optional<chat::ChatTemplate> tmpl;
  for (size_t i = 0; i < items.size(); ++i) {
    Item& item = items[i];
    if (!item.chat) continue;
    if (!tmpl) {
      auto t = load_chat_template(file, tok, args);
      if (!t.ok()) return t.status();
      tmpl = std::move(*t);
    }
    for (const auto& [k, v] : args.kwargs.items()) {
      if (!item.chat->kwargs.contains(k)) item.chat->kwargs[k] = v;
    }
    auto rendered = tmpl->render(*item.chat);
    if (!rendered.ok()) return rendered.status().with_prefix(fmt::format("batch: request {}", i));
    item.req.prompt_tokens = chat::encode_prompt(tok, rendered->text);
    item.parse.format = tmpl->output_format();
    item.parse.starts_in_reasoning = rendered->starts_in_reasoning;
    item.parse.separate_reasoning = args.separate_reasoning();
    item.parse.parse_tools = item.chat->tools.is_array() && !item.chat->tools.empty();
    if (item.parse.parse_tools) item.parse.tools = item.chat->tools;
  }
  return ok_status();
}

json result_json(const Item& item, const Outcome& o, size_t index) {
  const engine::RequestStats& s = o.stats;
  std::vector<double> gaps;
  for (size_t i = 1; i < o.token_times.size(); ++i) gaps.push_back((o.token_times[i] - o.token_times[i - 1]) * 1e3);
  json r = {{"index", index}, {"finish_reason", std::string(engine::finish_reason_name(o.finish))},
            {"text", o.text}, {"tokens", o.tokens}, {"prompt_tokens", s.n_prompt_tokens},
            {"cached_prompt_tokens", s.n_cached_prompt_tokens}, {"completion_tokens", s.n_completion_tokens},
            {"queue_ms", s.queue_time() * 1e3}, {"ttft_ms", s.ttft() * 1e3}, {"latency_ms", s.latency() * 1e3},
            {"decode_tok_s", s.decode_tok_per_s()}, {"itl_p50_ms", percentile(gaps, 0.5)},
            {"itl_p99_ms", percentile(gaps, 0.99)}, {"preemptions", s.n_preemptions}};
  if (s.n_draft_tokens > 0) {
    r["draft_tokens"] = s.n_draft_tokens;
    r["accepted_draft_tokens"] = s.n_accepted_tokens;
  }
  if (item.extra.contains("id")) r["id"] = item.extra["id"];
  if (!o.error.empty()) r["error"] = o.error;
  if (!o.logprobs.empty()) r["logprobs"] = o.logprobs;
  if (item.chat) {
    const chat::ParsedOutput p = chat::parse_output(o.text, item.parse);
    r["content"] = p.content;
    if (!p.reasoning_content.empty()) r["reasoning_content"] = p.reasoning_content;
    json calls = json::array();
    for (const auto& c : p.tool_calls) {
      calls.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
    }
    if (!calls.empty()) r["tool_calls"] = std::move(calls);
  }
  return r;
}

}  // namespace

int cmd_batch(int argc, char** argv) {
  CLI::App app{"Run a JSONL file of requests through the continuous-batching engine.", "batch"};
  BatchArgs a;
  a.engine.n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  add_flags(app, a);
  if (auto rc = parse(app, argc, argv)) return *rc;
  kernels::Isa isa = kernels::best_isa();
  if (!a.isa.empty()) {
    auto i = kernels::isa_from_name(a.isa);
    if (!i || !kernels::isa_supported(*i)) return report(usage_error("batch: --isa '{}' is unknown or unsupported here", a.isa));
    isa = *i;
  }
  auto kvt = kv::kv_type_from_name(a.kv_type);
  if (!kvt.ok()) return report(kvt.status().with_prefix("batch: --kv-type"));
  a.engine.kv_type = *kvt;
  auto kv_bytes = parse_size(a.kv_size);
  if (!kv_bytes.ok()) return report(kv_bytes.status());
  a.engine.kv_bytes = *kv_bytes;
  auto items = read_prompts(a.prompts_path, a.ignore_eos);
  if (!items.ok()) return report(items.status());
  auto model = model::Model::load(a.model_path, kernels::kernels_for(isa), a.backing);
  if (!model.ok()) return report(model.status());
  auto tok = tokenizer::Tokenizer::from_gguf(model->file());
  if (!tok.ok()) return report(tok.status());
  if (Status s = render_chats(*items, model->file(), *tok, a.chat); !s.ok()) return report(s);
  for (Item& item : *items) {
    if (!item.prediction.empty()) item.req.prediction = tok->encode(item.prediction, false, false);
  }
  if (Status s = resolve_engine_spec(a.spec, *model, a.engine); !s.ok()) return report(s.with_prefix("batch"));
  auto eng = engine::Engine::create(*model, &*tok, a.engine);
  if (!eng.ok()) return report(eng.status());
  engine::Engine& e = **eng;
  if (!a.quiet) fmt::print(stderr, "ridge batch: {}\n", engine::format_budget(e.budget()));

  std::vector<Outcome> outcomes(items->size());
  const double t0 = now_seconds();
  size_t next = 0;
  while (next < items->size() || e.has_work()) {
    const double now = now_seconds() - t0;
    for (; next < items->size() && (*items)[next].arrival <= now; ++next) {
      engine::Request req = (*items)[next].req;
      Outcome* o = &outcomes[next];
      req.on_output = [o](const engine::RequestOutput& ev) {
        const double t = now_seconds();
        for (int32_t tk : ev.tokens) {
          o->tokens.push_back(tk);
          o->token_times.push_back(t);
        }
        for (const auto& lp : ev.logprobs) o->logprobs.push_back({{"token", lp.token}, {"logprob", lp.logprob}});
        o->text += ev.text;
        if (ev.finished()) {
          o->finish = ev.finish;
          o->error = ev.error;
          o->stats = ev.stats;
        }
      };
      auto id = e.add_request(std::move(req));
      if (!id.ok()) return report(id.status().with_prefix(fmt::format("request {}", next + 1)));
    }
    if (!e.step() && next < items->size()) {
      const double wait = (*items)[next].arrival - (now_seconds() - t0);
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(std::min(wait, 0.01)));
    }
  }
  const double wall = now_seconds() - t0;

  std::vector<double> ttft, lat, itl;
  int64_t n_prompt = 0, n_gen = 0, n_err = 0;
  for (const Outcome& o : outcomes) {
    ttft.push_back(o.stats.ttft() * 1e3);
    lat.push_back(o.stats.latency() * 1e3);
    for (size_t i = 1; i < o.token_times.size(); ++i) itl.push_back((o.token_times[i] - o.token_times[i - 1]) * 1e3);
    n_prompt += o.stats.n_prompt_tokens;
    n_gen += o.stats.n_completion_tokens;
    n_err += o.finish == engine::FinishReason::kError;
  }
  if (!a.out_path.empty()) {
    std::ofstream out(a.out_path);
    if (!out) return report(error("batch: cannot write --out '{}'", a.out_path));
    for (size_t i = 0; i < outcomes.size(); ++i) out << result_json((*items)[i], outcomes[i], i).dump() << "\n";
  }
  // Steady decode: the window in which every request was past its first token and none had
  // finished, i.e. all of them decoding together.
  double w0 = 0, w1 = 1e300;
  for (const Outcome& o : outcomes) {
    if (o.token_times.size() < 2) continue;
    w0 = std::max(w0, o.token_times.front());
    w1 = std::min(w1, o.token_times.back());
  }
  int64_t n_in_window = 0;
  for (const Outcome& o : outcomes) {
    for (double t : o.token_times) n_in_window += t > w0 && t <= w1;
  }
  const engine::EngineStats st = e.stats();
  fmt::print("requests {} · prompt tokens {} · generated tokens {} · wall {:.2f} s\n", outcomes.size(), n_prompt, n_gen, wall);
  fmt::print("throughput: {:.1f} tok/s total (prompt + generated), {:.1f} generated tok/s\n",
             static_cast<double>(n_prompt + n_gen) / wall, static_cast<double>(n_gen) / wall);
  fmt::print("TTFT ms: p50 {:.1f} p90 {:.1f} p99 {:.1f} · latency ms: p50 {:.1f} p90 {:.1f} p99 {:.1f}\n",
             percentile(ttft, 0.5), percentile(ttft, 0.9), percentile(ttft, 0.99), percentile(lat, 0.5),
             percentile(lat, 0.9), percentile(lat, 0.99));
  fmt::print("inter-token ms: p50 {:.2f} p99 {:.2f} max {:.2f}\n", percentile(itl, 0.5), percentile(itl, 0.99),
             itl.empty() ? 0.0 : *std::max_element(itl.begin(), itl.end()));
  if (w1 > w0 && w1 < 1e300) {
    fmt::print("steady decode: {:.1f} tok/s with {} sequences ({:.2f} s window)\n",
               static_cast<double>(n_in_window) / (w1 - w0), outcomes.size(), w1 - w0);
  }
  fmt::print("prefix cache: {:.1f}% of prompt tokens hit ({} tokens) · preemptions {} · steps {} · errors {}\n",
             st.prefix_cache_hit_rate * 100, st.n_cached_tokens, st.n_preemptions, st.n_steps, n_err);
  if (const std::string spec = format_spec_stats(e.options(), st); !spec.empty()) fmt::print("{}\n", spec);
  if (st.bytes_moved > 0 && st.busy_seconds > 0) {
    fmt::print("memory traffic (cost model): {:.2f} GB moved, {:.1f} GB/s while stepping\n", st.bytes_moved / 1e9,
               st.bytes_moved / 1e9 / st.busy_seconds);
  }
  return n_err > 0 ? 1 : 0;
}

}  // namespace ridge::cli
