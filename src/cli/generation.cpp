#include "cli/generation.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "analysis/bench.h"
#include "analysis/probe.h"
#include "base/timer.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "sampling/draft_draw.h"
#include "sampling/stop_matcher.h"
#include "spec/draft_length.h"

namespace ridge::cli {

void add_generation_options(CLI::App& app, GenerationOptions& o) {
  sampling::SamplingParams& s = o.sampling;
  app.add_option("-m,--model", o.model_path, "GGUF model file")->required();
  app.add_option("-t,--threads", o.n_threads, "threads (default: all cores)");
  app.add_option("-c,--ctx-size", o.n_ctx, "context size in tokens (default: min(training, 4096))");
  app.add_option("-b,--batch-size", o.n_batch, "prompt tokens per forward step")->capture_default_str();
  app.add_option("-n,--n-predict", o.n_predict, "most tokens to generate")->capture_default_str();
  app.add_option("--isa", o.isa, "kernel ISA: ref, avx2, avx512 (default: best for this CPU; avx512 prefill uses AMX-INT8 where present, RIDGE_AMX=0 turns it off)");
  add_device_option(app, o.device);
  app.add_option("--kv-type", o.kv_type, "KV cache type: f16, bf16, q8_0 (head_dim % 32 == 0) or f32")->capture_default_str();
  app.add_flag("--swa-full", o.swa_full, "keep every position's K/V in the sliding-window layers too (default: only their window)");
  app.add_option("--temp", s.temperature, "temperature (0: greedy)")->capture_default_str();
  app.add_option("--top-k", s.top_k, "top-k (0: off)")->capture_default_str();
  app.add_option("--top-p", s.top_p, "top-p (1: off)")->capture_default_str();
  app.add_option("--min-p", s.min_p, "min-p (0: off)")->capture_default_str();
  app.add_option("--repeat-penalty", s.repetition_penalty, "repetition penalty (1: off)")
      ->capture_default_str();
  app.add_option("--repeat-last-n", s.penalty_last_n, "penalty window (-1: all, 0: off)")
      ->capture_default_str();
  app.add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty")->capture_default_str();
  app.add_option("--presence-penalty", s.presence_penalty, "presence penalty")->capture_default_str();
  app.add_option("-s,--seed", o.seed, "random seed (default: random)");
  app.add_option("--stop", s.stop, "stop string (repeatable)");
  app.add_option("--spec", o.spec, "speculative decoding: ngram (prompt lookup), draft (--draft) or mtp (the model's "
                                  "MTP head); output unchanged");
  app.add_option("--draft", o.draft_path, "draft model for speculative decoding (same vocabulary)");
  app.add_option("--spec-max", o.spec_max, "draft tokens per step at most")->capture_default_str();
  app.add_option("--spec-ngram", o.spec_ngram, "longest n-gram --spec ngram looks up")->capture_default_str();
  app.add_option("--spec-rule", o.spec_rule, kSpecRuleHelp)->capture_default_str();
  add_mmap_flag(app, o.backing);
}

namespace {

Status validate(const GenerationOptions& o) {
  if (o.n_threads && *o.n_threads < 1) return usage_error("-t must be at least 1, got {}", *o.n_threads);
  if (o.n_ctx < 0) return usage_error("-c must be positive, got {}", o.n_ctx);
  if (o.n_batch < 1) return usage_error("-b must be at least 1, got {}", o.n_batch);
  if (o.n_predict < 0) return usage_error("-n must be 0 or more, got {}", o.n_predict);
  if (auto t = kv::kv_type_from_name(o.kv_type); !t.ok()) return t.status().with_prefix("--kv-type");
  for (const auto& stop : o.sampling.stop) {
    if (stop.empty()) return usage_error("--stop: empty stop string");
  }
  if (!o.spec.empty() || o.spec_rule != "auto") RIDGE_RETURN_IF_ERROR(check_spec_flags(o.spec, o.draft_path, o.spec_rule));
  if (o.spec_max < 1 || o.spec_max > 64) return usage_error("--spec-max must be 1..64, got {}", o.spec_max);
  if (o.spec_ngram < 1 || o.spec_ngram > 16) return usage_error("--spec-ngram must be 1..16, got {}", o.spec_ngram);
  return ok_status();
}

}  // namespace

Result<Loaded> load_for_generation(GenerationOptions& o) {
  if (!o.draft_path.empty() && o.spec.empty()) o.spec = "draft";
  RIDGE_RETURN_IF_ERROR(validate(o));
  RIDGE_ASSIGN_OR_RETURN(const kernels::Kernels* k, pick_kernels(o.isa, o.device));
  Stopwatch sw;
  RIDGE_ASSIGN_OR_RETURN(model::Model m, model::Model::load(o.model_path, *k, o.backing));
  Loaded l;
  l.model = std::make_unique<model::Model>(std::move(m));
  if (!o.spec.empty()) {
    if (o.spec == "ngram") l.ngram = spec::NgramOptions{o.spec_ngram, 1, o.spec_max};
    l.spec_max = o.spec_max;
    l.spec_rejection = o.spec_rule == "rejection" || (o.spec_rule == "auto" && (o.spec == "draft" || o.spec == "mtp") &&
                                                      o.sampling.temperature > 0.0f);
  }
  if (o.spec == "mtp") {
    if (!l.model->has_mtp()) {
      return usage_error("--spec mtp: {} has no MTP head{}", l.model->config().name,
                         l.model->config().has_mtp() ? " (its nextn layers' tensors are not in the file)"
                                                     : " (Qwen3.5 files carry one as nextn layers)");
    }
    l.mtp = true;
  }
  RIDGE_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::from_gguf(l.model->file()));
  l.tok = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  o.sampling.seed = o.seed ? *o.seed : sampling::random_seed();
  o.sampling.max_tokens = -1;
  RIDGE_RETURN_IF_ERROR(o.sampling.validate(static_cast<int32_t>(l.model->config().n_vocab)));
  const int n_threads =
      o.n_threads ? *o.n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  l.pool = std::make_shared<ThreadPool>(n_threads);
  engine::SessionOptions so;
  so.n_ctx = o.n_ctx;
  so.swa_full = o.swa_full;
  so.kv_type = l.kv_type = *kv::kv_type_from_name(o.kv_type);  // checked by validate()
  so.max_batch = o.n_batch;
  so.n_threads = n_threads;
  so.backend = o.device;
  if (l.spec_max > 0) {
    so.max_outputs = o.spec_max + 1;  // a step verifies the draft's rows
    so.keep_row_states = true;        // and rolls rejected ones back (a recurrent state)
  }
  so.mtp = l.mtp;
  RIDGE_ASSIGN_OR_RETURN(engine::Session s, engine::Session::create(*l.model, so, l.pool));
  l.session = std::make_unique<engine::Session>(std::move(s));
  if (o.spec == "draft") {
    so.n_ctx = l.session->n_ctx();
    RIDGE_ASSIGN_OR_RETURN(l.draft, DraftModel::load(o.draft_path, *l.model, *k, so, l.pool));
  }
  l.load_seconds = sw.seconds();
  return l;
}

namespace {

// The time of a step that verifies k = 0..spec_max drafts after n_past tokens, relative to a
// plain decode step (cost model: max(bytes / bandwidth, FLOPs / peak) with the probe's figures,
// the bytes alone without a probe; every row needs logits), and the draft model's time per
// drafted token in the same unit (0 for prompt lookup).
struct SpecCosts {
  std::vector<double> step;
  double draft = 0;
};

// One model's step time for 1..max_rows rows after n_past tokens (index rows - 1), in seconds
// with a probe, in bytes without; empty when the file's types cannot be costed.
std::vector<double> step_times(const model::Model& m, kv::KvType kv_type, int64_t n_past, int64_t max_rows) {
  auto types = model::weight_types_from_gguf(m.file());
  if (!types.ok()) return {};
  auto mc = model::model_cost(m.config(), *types, kv_type);
  if (!mc.ok()) return {};
  static const std::optional<analysis::ProbeResult> probe = analysis::load_probe();
  std::optional<analysis::BenchRoof> roof;
  if (probe) roof = analysis::roof_from_probe(*probe, (*types)(model::TensorRole::kFfnUp, 0));
  std::vector<double> out;
  for (int64_t rows = 1; rows <= max_rows; ++rows) {
    const model::SeqWork w{n_past, rows};
    model::StepCost c = model::cost_of_step(*mc, std::span<const model::SeqWork>(&w, 1));
    c.flops += static_cast<double>(rows - 1) * mc->head_flops_per_row;
    out.push_back(roof ? model::roof_time(c, roof->bandwidth_bytes_per_s, roof->peak_flops) : c.bytes());
  }
  return out;
}

SpecCosts spec_costs(const Loaded& l, int64_t n_past) {
  SpecCosts out;
  const std::vector<double> t = step_times(*l.model, l.kv_type, n_past, l.spec_max + 1);
  const double plain = t.empty() ? 0.0 : t[0];
  for (int64_t k = 0; k <= l.spec_max; ++k) out.step.push_back(plain > 0 ? t[static_cast<size_t>(k)] / plain : 1.0);
  if (l.mtp) {  // a draft step streams the head's block, eh_proj and the head: bytes relative to a step's
    const model::Weights& w = l.model->weights();
    out.draft = static_cast<double>(w.mtp.matrix_bytes) / static_cast<double>(std::max<uint64_t>(1, w.matrix_bytes));
  }
  if (l.draft && plain > 0) {
    const std::vector<double> d = step_times(l.draft->model(), l.kv_type, n_past, 1);
    if (!d.empty()) out.draft = d[0] / plain;
  }
  return out;
}

}  // namespace

Result<GenerationStats> generate(Loaded& l, sampling::Sampler& sampler,
                                 std::span<const float> logits, std::vector<int32_t>& history,
                                 int64_t n_max, const std::vector<std::string>& stops,
                                 const std::function<void(std::string_view)>& emit,
                                 std::vector<int32_t>* generated) {
  GenerationStats st;
  tokenizer::IncrementalDetokenizer detok(*l.tok);
  sampling::StopMatcher stop(stops);
  engine::Session& s = *l.session;
  const auto n_vocab = static_cast<size_t>(l.model->config().n_vocab);
  Stopwatch sw;
  // Emits a sampled token; false when generation ends with it.
  auto push = [&](int32_t t) {
    ++st.n_generated;
    if (l.tok->is_eog(t)) {
      st.stopped_by_eog = true;
      return false;
    }
    history.push_back(t);
    if (generated) generated->push_back(t);
    const auto out = stop.push(detok.push(t));
    if (!out.text.empty()) emit(out.text);
    if (out.stopped) {
      st.stopped_by_string = true;
      return false;
    }
    return st.n_generated < n_max;
  };
  auto take = [&](std::span<const float> row, int32_t& t) {
    t = sampler.sample(row, history);
    return push(t);
  };
  // The rejection rule's draft side: the same settings on a stream of its own.
  std::optional<sampling::Sampler> draft_sampler;
  std::vector<std::vector<sampling::TokenProb>> draft_q;
  if (l.spec_rejection) draft_sampler.emplace(sampling::draft_sampling_params(sampler.params()), sampler.n_vocab());
  int32_t tok = 0;  // sampled and emitted, not yet in the cache
  bool more = n_max > 0 && take(logits, tok);
  // Speculation: the draft length that pays best at the acceptance and step costs measured so
  // far (one draft token every 8th step where none pays, to keep measuring them), within a cap
  // that doubles after a draft taken whole and falls back after a rejection, so that a run
  // starts with short drafts until the timing is known.
  const SpecCosts model_costs = l.spec_max > 0 ? spec_costs(l, s.n_past()) : SpecCosts{};
  spec::StepCosts costs(model_costs.step, model_costs.draft);
  spec::AcceptanceRate acceptance;
  int64_t cap = 1;
  while (more) {
    if (s.n_past() >= s.n_ctx()) {
      st.context_full = true;
      break;
    }
    std::vector<int32_t> step{tok};
    if (l.spec_max > 0) {
      int64_t k = spec::best_draft_length(acceptance.value(), costs.steps(), costs.draft());
      // Where no draft pays, one every 8th step keeps the acceptance measured, or so rarely that
      // such a step's extra time (the draft, a row more to verify) is about 2% of the time.
      const double probe = costs.draft() + costs.steps()[1] - 1.0;
      const auto period = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(probe / 0.02)), 8, 512);
      if (k == 0 && st.n_decode_steps % period == 0) k = 1;
      k = l.spec_cost_rule ? std::min(k, cap) : l.spec_max;
      // No draft past the context, nor of the last token to generate (sampled from the row
      // before it, it needs no check).
      const int64_t room = std::min({s.n_ctx() - s.n_past() - 1, n_max - st.n_generated - 1, k});
      std::vector<int32_t> draft;
      if (l.ngram) {
        draft = spec::ngram_draft(history, *l.ngram);
      } else if (room > 0) {
        const Stopwatch drafting;
        if (l.mtp) {
          RIDGE_ASSIGN_OR_RETURN(draft, s.draft_mtp(history, room, draft_sampler ? &*draft_sampler : nullptr,
                                                    draft_sampler ? &draft_q : nullptr));
        } else {
          RIDGE_ASSIGN_OR_RETURN(draft, l.draft->propose(history, room, draft_sampler ? &*draft_sampler : nullptr,
                                                         draft_sampler ? &draft_q : nullptr));
        }
        costs.record_draft(static_cast<int64_t>(draft.size()), drafting.seconds());
      }
      draft.resize(static_cast<size_t>(std::clamp<int64_t>(room, 0, static_cast<int64_t>(draft.size()))));
      step.insert(step.end(), draft.begin(), draft.end());
    }
    const int64_t base = s.n_past();
    const Stopwatch stepping;
    RIDGE_ASSIGN_OR_RETURN(logits, s.eval(step, /*all_logits=*/step.size() > 1));
    ++st.n_decode_steps;
    ++st.n_evaluated;
    const auto k = static_cast<int64_t>(step.size()) - 1;
    if (l.spec_max > 0) {
      costs.record_step(k, stepping.seconds());
      st.spec.predicted_units += model_costs.step[static_cast<size_t>(k)] + static_cast<double>(k) * model_costs.draft;
    }
    if (k == 0) {
      st.spec.n_tokens += 1;
      more = take(logits, tok);
      continue;
    }
    st.spec.n_steps += 1;
    st.spec.n_drafted += k;
    const int64_t accepted_before = st.spec.n_accepted;
    for (int64_t i = 0; i <= k; ++i) {
      const auto row = logits.subspan(static_cast<size_t>(i) * n_vocab, n_vocab);
      if (draft_sampler && i < k) {
        tok = sampler.verify_draft(row, history, step[static_cast<size_t>(i + 1)], draft_q[static_cast<size_t>(i)]);
        more = push(tok);
      } else {
        more = take(row, tok);
      }
      // Draft i + 1 is right when the sampler picked it: its K/V is already in the cache.
      if (more && i < k && tok == step[static_cast<size_t>(i + 1)]) {
        ++st.spec.n_accepted;
        ++st.n_evaluated;
        continue;
      }
      // The newest token and the accepted drafts stay (a recurrent state: the session kept the
      // state after each row of the step).
      if (s.truncate(base + 1 + i) != base + 1 + i) return error("speculation: the session could not roll back to {}", base + 1 + i);
      break;
    }
    const int64_t accepted = st.spec.n_accepted - accepted_before;
    acceptance.update(k, accepted);
    cap = accepted == k ? std::min(2 * cap, l.spec_max) : std::max<int64_t>(1, accepted + 1);
    st.spec.n_tokens += 1 + accepted;
  }
  st.decode_seconds = sw.seconds();
  if (!stop.stopped()) {
    const auto out = stop.push(detok.flush());
    if (!out.text.empty()) emit(out.text);
    if (!out.stopped) {
      const std::string rest = stop.flush();
      if (!rest.empty()) emit(rest);
    }
  }
  return st;
}

}  // namespace ridge::cli
