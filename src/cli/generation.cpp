#include "cli/generation.h"

#include <thread>

#include "base/timer.h"
#include "gguf/reader.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "sampling/stop_matcher.h"

namespace ridge::cli {

void add_generation_options(CLI::App& app, GenerationOptions& o) {
  sampling::SamplingParams& s = o.sampling;
  app.add_option("-m,--model", o.model_path, "GGUF model file")->required();
  app.add_option("-t,--threads", o.n_threads, "threads (default: all cores)");
  app.add_option("-c,--ctx-size", o.n_ctx, "context size in tokens (default: min(training, 4096))");
  app.add_option("-b,--batch-size", o.n_batch, "prompt tokens per forward step")->capture_default_str();
  app.add_option("-n,--n-predict", o.n_predict, "most tokens to generate")->capture_default_str();
  app.add_option("--isa", o.isa, "kernel ISA: ref, avx2, avx512 (default: best for this CPU; avx512 prefill uses AMX-INT8 where present, RIDGE_AMX=0 turns it off)");
  app.add_option("--kv-type", o.kv_type, "KV cache type: f16, bf16, q8_0 (head_dim % 32 == 0) or f32")->capture_default_str();
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
  return ok_status();
}

Result<const kernels::Kernels*> pick_kernels(const std::string& name) {
  if (name.empty()) return &kernels::kernels_for(kernels::best_isa());
  auto isa = kernels::isa_from_name(name);
  if (!isa) return usage_error("--isa must be ref, avx2 or avx512, got '{}'", name);
  if (!kernels::isa_supported(*isa)) return error("--isa {}: this CPU does not support it", name);
  return &kernels::kernels_for(*isa);
}

}  // namespace

Result<Loaded> load_for_generation(GenerationOptions& o) {
  RIDGE_RETURN_IF_ERROR(validate(o));
  RIDGE_ASSIGN_OR_RETURN(const kernels::Kernels* k, pick_kernels(o.isa));
  Stopwatch sw;
  RIDGE_ASSIGN_OR_RETURN(model::Model m, model::Model::load(o.model_path, *k, o.backing));
  Loaded l;
  l.model = std::make_unique<model::Model>(std::move(m));
  RIDGE_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::from_gguf(l.model->file()));
  l.tok = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  o.sampling.seed = o.seed ? *o.seed : sampling::random_seed();
  o.sampling.max_tokens = -1;
  RIDGE_RETURN_IF_ERROR(o.sampling.validate(static_cast<int32_t>(l.model->config().n_vocab)));
  const int n_threads =
      o.n_threads ? *o.n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  l.pool = std::make_unique<ThreadPool>(n_threads);
  model::SessionOptions so;
  so.n_ctx = o.n_ctx;
  so.kv_type = *kv::kv_type_from_name(o.kv_type);  // checked by validate()
  so.max_batch = o.n_batch;
  so.n_threads = n_threads;
  RIDGE_ASSIGN_OR_RETURN(model::Session s, model::Session::create(*l.model, so));
  l.session = std::make_unique<model::Session>(std::move(s));
  l.load_seconds = sw.seconds();
  return l;
}

Result<GenerationStats> generate(Loaded& l, sampling::Sampler& sampler,
                                 std::span<const float> logits, std::vector<int32_t>& history,
                                 int64_t n_max, const std::vector<std::string>& stops,
                                 const std::function<void(std::string_view)>& emit,
                                 std::vector<int32_t>* generated) {
  GenerationStats st;
  tokenizer::IncrementalDetokenizer detok(*l.tok);
  sampling::StopMatcher stop(stops);
  model::Session& s = *l.session;
  Stopwatch sw;
  while (st.n_generated < n_max) {
    const int32_t tok = sampler.sample(logits, history);
    ++st.n_generated;
    if (l.tok->is_eog(tok)) {
      st.stopped_by_eog = true;
      break;
    }
    history.push_back(tok);
    if (generated) generated->push_back(tok);
    const auto out = stop.push(detok.push(tok));
    if (!out.text.empty()) emit(out.text);
    if (out.stopped) {
      st.stopped_by_string = true;
      break;
    }
    if (st.n_generated == n_max) break;
    if (s.n_past() >= s.n_ctx()) {
      st.context_full = true;
      break;
    }
    RIDGE_ASSIGN_OR_RETURN(logits, s.eval(std::span<const int32_t>(&tok, 1), *l.pool));
    ++st.n_decode_steps;
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
