#include "cli/engine_spec.h"

#include <fmt/format.h>

#include "analysis/bench.h"
#include "analysis/probe.h"
#include "cli/draft_model.h"

namespace ridge::cli {

void add_engine_spec_flags(CLI::App& app, EngineSpecArgs& a, engine::EngineOptions& o) {
  app.add_option("--spec", a.method, "speculative decoding: ngram (prompt lookup), draft (--draft) or mtp (the "
                                     "model's MTP head), verified in the batch; output unchanged, turned off per "
                                     "step where it does not pay");
  app.add_option("--draft", a.draft_path, "draft model for speculative decoding (same vocabulary; implies --spec draft)");
  app.add_option("--spec-rule", a.rule, kSpecRuleHelp)->capture_default_str();
  app.add_option("--spec-max", o.spec_max, "draft tokens per sequence and step at most")->capture_default_str();
  app.add_option("--spec-ngram", o.spec_ngram, "longest n-gram --spec ngram looks up")->capture_default_str();
}

Status resolve_engine_spec(EngineSpecArgs& a, const model::Model& m, engine::EngineOptions& o) {
  if (a.method.empty() && !a.draft_path.empty()) a.method = "draft";
  if (a.method.empty() && a.rule == "auto") return ok_status();
  RIDGE_RETURN_IF_ERROR(check_spec_flags(a.method, a.draft_path, a.rule));
  o.spec_rejection = a.rule != "match";
  if (a.method == "draft") {
    RIDGE_ASSIGN_OR_RETURN(model::Model d, load_draft_model(a.draft_path, m, m.kernels()));
    a.draft_model = std::make_unique<model::Model>(std::move(d));
    o.draft_model = a.draft_model.get();
  }
  if (a.method == "mtp" && !m.has_mtp()) {
    return usage_error("--spec mtp: {} has no MTP head{}", m.config().name,
                       m.config().has_mtp() ? " (its nextn layers' tensors are not in the file)"
                                            : " (Qwen3.5 files carry one as nextn layers)");
  }
  o.spec = a.method == "ngram" ? engine::SpecMethod::kNgram
           : a.method == "mtp" ? engine::SpecMethod::kMtp
                               : engine::SpecMethod::kDraft;
  if (auto probe = analysis::load_probe()) {
    auto types = model::weight_types_from_gguf(m.file());
    if (types.ok()) {
      const analysis::BenchRoof roof = analysis::roof_from_probe(*probe, (*types)(model::TensorRole::kFfnUp, 0));
      o.roof_bandwidth = roof.bandwidth_bytes_per_s;
      o.roof_flops = roof.peak_flops;
    }
  }
  return ok_status();
}

std::string format_spec_stats(const engine::EngineOptions& o, const engine::EngineStats& st) {
  if (o.spec == engine::SpecMethod::kNone) return {};
  const double rate = st.n_draft_tokens > 0 ? 100.0 * static_cast<double>(st.n_accepted_tokens) / static_cast<double>(st.n_draft_tokens) : 0.0;
  const std::string mixed = fmt::format(" · {} of them beside a prompt chunk", st.n_draft_tokens_mixed);
  if (o.spec == engine::SpecMethod::kMtp) {
    return fmt::format("speculation: MTP head, {} draft steps ({:.2f} s), {} draft tokens verified, {} accepted ({:.0f}%){}",
                       st.n_draft_steps, st.draft_seconds, st.n_draft_tokens, st.n_accepted_tokens, rate, mixed);
  }
  if (o.spec == engine::SpecMethod::kDraft) {
    return fmt::format("speculation: draft model, {} draft steps ({:.2f} s), {} draft tokens verified, {} accepted ({:.0f}%){}",
                       st.n_draft_steps, st.draft_seconds, st.n_draft_tokens, st.n_accepted_tokens, rate, mixed);
  }
  return fmt::format("speculation: prompt lookup, {} draft tokens verified, {} accepted ({:.0f}%){}",
                     st.n_draft_tokens, st.n_accepted_tokens, rate, mixed);
}

}  // namespace ridge::cli
