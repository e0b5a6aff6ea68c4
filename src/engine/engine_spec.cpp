// Speculative decoding inside continuous batching (docs/speculative.md): drafts proposed per
// decoding sequence, the lengths that pay for the whole step, and their verification.
#include <algorithm>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "spec/ngram.h"

namespace ridge::engine {

namespace {

// base + k * row, field by field.
model::StepCost plus_rows(model::StepCost base, const model::StepCost& row, double k) {
  base.weight_bytes += k * row.weight_bytes;
  base.kv_write_bytes += k * row.kv_write_bytes;
  base.activation_bytes += k * row.activation_bytes;
  base.flops += k * row.flops;
  return base;
}

}  // namespace

model::StepCost Engine::step_cost(const SchedulerOutput& out) const {
  std::vector<model::SeqWork> work;
  work.reserve(out.chunks.size());
  int64_t draft_rows = 0;
  for (const ScheduledChunk& c : out.chunks) {
    work.push_back({c.start, c.n_new});
    draft_rows += c.n_draft;
  }
  model::StepCost cost = model::cost_of_step(*cost_, work);
  // Every draft row returns logits: the output head runs once more per row.
  cost.flops += static_cast<double>(draft_rows) * cost_->head_flops_per_row;
  cost.activation_bytes += static_cast<double>(draft_rows) * cost_->head_activation_bytes;
  return cost;
}

double Engine::model_step_time(const SchedulerOutput& out) const {
  return cost_ ? model::roof_time(step_cost(out), opts_.roof_bandwidth, opts_.roof_flops) : 1.0;  // no cost model (a test runner): one unit
}

void Engine::add_drafts(SchedulerOutput& out) {
  std::vector<size_t> chunk_of;
  std::vector<double> alpha;
  std::vector<int64_t> max_len;
  double n_emitting = 0;
  for (size_t i = 0; i < out.chunks.size(); ++i) {
    ScheduledChunk& c = out.chunks[i];
    Sequence& seq = *c.seq;
    seq.draft.clear();
    if (!c.need_logits) continue;
    n_emitting += 1;
    // Decodes only (a prompt's first token has no history to match yet), and not under a
    // grammar (its matcher cannot take a rejected draft back).
    if (c.n_new != 1 || seq.n_generated() == 0 || seq.matcher) continue;
    // No draft past max-model-len, nor of the last token to generate (sampled from the row
    // before it, it needs no check).
    const int32_t room = std::min({opts_.max_model_len - seq.n_tokens(), seq.max_tokens - seq.n_generated() - 1,
                                   seq.draft_cap, opts_.spec_max});
    if (room <= 0) continue;
    const spec::NgramOptions lookup{opts_.spec_ngram, 1, room};
    seq.draft_from = -1;
    if (!seq.prediction.empty()) {
      spec::PredictionDraft d = spec::prediction_draft(seq.tokens, seq.prediction, lookup, seq.prediction_hint);
      seq.draft = std::move(d.tokens);
      if (!seq.draft.empty()) seq.draft_from = d.from;
    }
    if (seq.draft.empty() && opts_.spec == SpecMethod::kNgram) seq.draft = spec::ngram_draft(seq.tokens, lookup);
    if (seq.draft.empty()) continue;
    chunk_of.push_back(i);
    if (!seq.acceptance) seq.acceptance = acceptance_;
    alpha.push_back(seq.acceptance->value());
    max_len.push_back(static_cast<int64_t>(seq.draft.size()));
  }
  if (chunk_of.empty()) return;
  // The step's time with k more rows: its cost plus k rows of one more token after the longest
  // context (a draft row: the layers, a K/V write, the head; an MoE's extra experts).
  const int64_t rows = out.n_tokens;
  model::StepCost base, row;
  if (cost_) {
    base = step_cost(out);
    int64_t past = 0;
    for (const ScheduledChunk& c : out.chunks) past = std::max<int64_t>(past, c.start);
    const model::SeqWork one{past, 1}, two{past, 2};
    const model::StepCost a = model::cost_of_step(*cost_, std::span<const model::SeqWork>(&one, 1));
    const model::StepCost b = model::cost_of_step(*cost_, std::span<const model::SeqWork>(&two, 1));
    row.weight_bytes = b.weight_bytes - a.weight_bytes;
    row.kv_write_bytes = b.kv_write_bytes - a.kv_write_bytes;
    row.activation_bytes = b.activation_bytes - a.activation_bytes + cost_->head_activation_bytes;
    row.flops = b.flops - a.flops + cost_->head_flops_per_row;
  }
  const auto model_time = [&](int64_t k) {
    return cost_ ? model::roof_time(plus_rows(base, row, static_cast<double>(k)), opts_.roof_bandwidth, opts_.roof_flops) : 1.0;
  };
  // Measured times scale the model's; a row count timed faster than the plain step (noise) does
  // not make rows look cheaper than the model says they are.
  const double plain = step_times_->estimate(rows, model_time(0));
  const auto step_time = [&](int64_t k) {
    const double m = model_time(k);
    return std::max(step_times_->estimate(rows + k, m), plain * m / model_time(0));
  };
  std::vector<int64_t> k = opts_.spec_cost_rule
                               ? spec::allocate_drafts(alpha, max_len, n_emitting, kMaxDraftRowsPerStep, step_time)
                               : max_len;
  // Where no draft pays, a one-token draft every 8th step keeps the acceptance and timings
  // measured; every 64th where a row costs more than a tenth of the step (past the knee).
  const int64_t period = step_time(1) < 1.1 * step_time(0) ? 8 : 64;
  if (std::all_of(k.begin(), k.end(), [](int64_t v) { return v == 0; }) && stats_.n_steps % period == 0) {
    k[static_cast<size_t>(std::max_element(alpha.begin(), alpha.end()) - alpha.begin())] = 1;
  }
  int64_t n_rows = 0;  // draft rows added: at most the runner's extra logits rows
  for (size_t j = 0; j < chunk_of.size(); ++j) {
    ScheduledChunk& c = out.chunks[chunk_of[j]];
    k[j] = std::min<int64_t>(k[j], kMaxDraftRowsPerStep - n_rows);
    if (k[j] <= 0 || !scheduler_->add_draft(out, c, static_cast<int32_t>(k[j]))) {
      c.seq->draft.clear();
      continue;
    }
    c.seq->draft.resize(static_cast<size_t>(k[j]));
    n_rows += k[j];
  }
}

size_t Engine::verify_draft(const ScheduledChunk& c, std::span<const float> logits) {
  Sequence& seq = *c.seq;
  const auto n_vocab = static_cast<size_t>(runner_->n_vocab());
  RequestOutput ev;
  int32_t kept = 1;  // the decoded token, then each draft the sampler picks itself
  for (int32_t i = 0; i <= c.n_draft; ++i) {
    const int32_t token = sample_row(seq, logits.subspan(static_cast<size_t>(i) * n_vocab, n_vocab), ev);
    ev.tokens.push_back(token);
    std::string text;
    ev.finish = append_token(seq, token, text);
    ev.text += text;
    if (ev.finish != FinishReason::kNone || i == c.n_draft || token != seq.draft[static_cast<size_t>(i)]) break;
    ++kept;
  }
  const int32_t accepted = kept - 1;
  seq.stats.n_draft_tokens += c.n_draft;
  seq.stats.n_accepted_tokens += accepted;
  stats_.n_draft_tokens += c.n_draft;
  stats_.n_accepted_tokens += accepted;
  seq.acceptance->update(c.n_draft, accepted);
  acceptance_.update(c.n_draft, accepted);
  if (seq.draft_from >= 0) seq.prediction_hint = seq.draft_from + accepted;
  seq.draft_cap = accepted == c.n_draft ? std::min(2 * seq.draft_cap, opts_.spec_max) : std::max(1, accepted + 1);
  seq.draft.clear();
  scheduler_->on_verified(c, kept);
  deliver(seq, std::move(ev));
  return static_cast<size_t>(c.n_draft) + 1;
}

}  // namespace ridge::engine
