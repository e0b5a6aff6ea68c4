// Speculative decoding inside continuous batching (docs/speculative.md): drafts proposed per
// decoding sequence, the lengths that pay for the whole step, and their verification.
#include <algorithm>
#include <cmath>

#include "base/timer.h"
#include "engine/engine.h"
#include "engine/scheduler.h"
#include "sampling/draft_draw.h"
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

void Engine::add_drafts(SchedulerOutput& out, bool decode_only) {
  std::vector<size_t> chunk_of;
  std::vector<double> alpha;
  std::vector<int64_t> max_len;
  std::vector<uint8_t> by_model;  // the draft model proposes after the lengths are chosen
  double n_emitting = 0;
  for (size_t i = 0; i < out.chunks.size(); ++i) {
    ScheduledChunk& c = out.chunks[i];
    Sequence& seq = *c.seq;
    seq.draft.clear();
    seq.draft_q.clear();
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
    const bool model = seq.draft.empty() && (drafter_ != nullptr || opts_.spec == SpecMethod::kMtp);
    if (seq.draft.empty() && !model) continue;
    chunk_of.push_back(i);
    if (!seq.acceptance) seq.acceptance = acceptance_;
    alpha.push_back(seq.acceptance->value());
    max_len.push_back(model ? room : static_cast<int64_t>(seq.draft.size()));
    by_model.push_back(model ? 1 : 0);
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
  // A step with a prompt chunk is another regime than the timed decode steps: the cost model
  // alone prices its draft rows.
  const double plain = decode_only ? step_times_->estimate(rows, model_time(0)) : model_time(0);
  const auto step_time = [&](int64_t k) {
    const double m = model_time(k);
    if (!decode_only) return m;
    return std::max(step_times_->estimate(rows + k, m), plain * m / model_time(0));
  };
  std::vector<int64_t> k = opts_.spec_cost_rule ? plan_drafts(alpha, max_len, by_model, n_emitting, step_time) : max_len;
  // Where no draft pays, a one-token draft every 8th step keeps the acceptance and timings
  // measured; every 64th where a row costs more than a tenth of the step (past the knee), and
  // with a draft model so rarely that its draft step costs about 2% of the time.
  int64_t period = step_time(1) < 1.1 * step_time(0) ? 8 : 64;
  if (drafter_ || opts_.spec == SpecMethod::kMtp) period = std::max(period, static_cast<int64_t>(std::min(512.0, std::ceil(draft_step_ratio() / 0.02))));
  if (std::all_of(k.begin(), k.end(), [](int64_t v) { return v == 0; }) && stats_.n_steps % period == 0) {
    k[static_cast<size_t>(std::max_element(alpha.begin(), alpha.end()) - alpha.begin())] = 1;
  }
  int64_t total = 0;  // draft rows: at most the runner's extra logits rows
  for (int64_t& v : k) {
    v = std::min<int64_t>(v, max_draft_rows() - total);
    total += v;
  }
  if (drafter_) propose_with_model(out, chunk_of, by_model, k);  // only shortens drafts
  if (opts_.spec == SpecMethod::kMtp) propose_with_mtp(out, chunk_of, by_model, k);
  for (size_t j = 0; j < chunk_of.size(); ++j) {
    ScheduledChunk& c = out.chunks[chunk_of[j]];
    if (k[j] <= 0 || !scheduler_->add_draft(out, c, static_cast<int32_t>(k[j]))) {
      c.seq->draft.clear();
      c.seq->draft_q.clear();
      continue;
    }
    c.seq->draft.resize(static_cast<size_t>(k[j]));
    if (!c.seq->draft_q.empty()) c.seq->draft_q.resize(static_cast<size_t>(k[j]));
  }
}

double Engine::draft_step_ratio() const {
  return draft_step_seconds_ > 0 && target_step_seconds_ > 0 ? draft_step_seconds_ / target_step_seconds_
                                                             : draft_ratio_model_;
}

std::vector<int64_t> Engine::plan_drafts(std::span<const double> alpha, std::span<const int64_t> max_len,
                                         std::span<const uint8_t> model, double n_emitting,
                                         const std::function<double(int64_t)>& step_time) const {
  if (std::find(model.begin(), model.end(), 1) == model.end()) {
    return spec::allocate_drafts(alpha, max_len, n_emitting, max_draft_rows(), step_time);
  }
  // Every draft step runs all the sequences still drafting: one depth D for the step, whose
  // draft steps cost D times a draft step. The best D of 0..spec_max by expected tokens per time.
  const double draft_step = step_time(0) * draft_step_ratio();
  std::vector<int64_t> best;
  double best_rate = -1;
  std::vector<int64_t> len(max_len.begin(), max_len.end());
  for (int64_t depth = 0; depth <= opts_.spec_max; ++depth) {
    for (size_t j = 0; j < len.size(); ++j) len[j] = model[j] ? std::min(max_len[j], depth) : max_len[j];
    const auto time = [&](int64_t rows) { return step_time(rows) + static_cast<double>(depth) * draft_step; };
    std::vector<int64_t> k = spec::allocate_drafts(alpha, len, n_emitting, max_draft_rows(), time);
    int64_t rows = 0, steps = 0;
    double tokens = n_emitting;
    for (size_t j = 0; j < k.size(); ++j) {
      rows += k[j];
      if (model[j]) steps = std::max(steps, k[j]);
      tokens += spec::expected_tokens(alpha[j], k[j]) - 1;
    }
    const double rate = tokens / (step_time(rows) + static_cast<double>(steps) * draft_step);
    if (rate > best_rate) {
      best_rate = rate;
      best = std::move(k);
    }
  }
  return best;
}

void Engine::propose_with_model(SchedulerOutput& out, std::span<const size_t> chunk_of,
                                std::span<const uint8_t> model, std::vector<int64_t>& k) {
  std::vector<Drafter::Work> work;
  std::vector<size_t> index;  // into chunk_of / k
  for (size_t j = 0; j < chunk_of.size(); ++j) {
    if (!model[j] || k[j] <= 0) continue;
    Sequence& seq = *out.chunks[chunk_of[j]].seq;
    Drafter::Work& w = work.emplace_back(Drafter::Work{seq.id, seq.tokens, static_cast<int32_t>(k[j])});
    if (seq.draft_sampler) {
      w.sampler = &*seq.draft_sampler;
      w.q = &seq.draft_q;
    }
    index.push_back(j);
  }
  if (work.empty()) return;
  const Stopwatch sw;
  const int64_t steps_before = drafter_->n_steps();
  Result<std::vector<std::vector<int32_t>>> drafts = drafter_->propose(work);
  const int64_t steps = drafter_->n_steps() - steps_before;
  stats_.draft_seconds += sw.seconds();
  if (steps > 0) {
    add_to_average(draft_step_seconds_, sw.seconds() / static_cast<double>(steps));
  }
  for (size_t w = 0; w < index.size(); ++w) {
    const size_t j = index[w];
    std::vector<int32_t>& d = out.chunks[chunk_of[j]].seq->draft;
    d = drafts.ok() ? std::move((*drafts)[w]) : std::vector<int32_t>{};  // a failed draft step drafts nothing
    if (d.empty()) out.chunks[chunk_of[j]].seq->draft_q.clear();
    k[j] = std::min<int64_t>(k[j], static_cast<int64_t>(d.size()));
  }
}

void Engine::propose_with_mtp(SchedulerOutput& out, std::span<const size_t> chunk_of,
                              std::span<const uint8_t> by_head, std::vector<int64_t>& k) {
  struct Drafting {
    size_t j;  // into chunk_of / k
    Sequence* seq;
    int32_t start;
    sampling::DraftDraw draw;
  };
  std::vector<Drafting> live;
  const auto d = static_cast<size_t>(runner_->n_embd());
  std::vector<float> h;  // each row's paired hidden state, in row order
  for (size_t j = 0; j < chunk_of.size(); ++j) {
    if (!by_head[j] || k[j] <= 0) continue;
    ScheduledChunk& c = out.chunks[chunk_of[j]];
    Sequence& seq = *c.seq;
    seq.draft.clear();
    if (!scheduler_->reserve_draft(out, c, static_cast<int32_t>(k[j]))) {
      k[j] = 0;
      continue;
    }
    const bool sampled = seq.draft_sampler.has_value();
    live.push_back({j, &seq, c.start, sampling::DraftDraw(sampled ? &*seq.draft_sampler : nullptr, seq.tokens,
                                                         sampled ? &seq.draft_q : nullptr)});
  }
  if (live.empty()) return;
  // The first row pairs the newest token with the hidden state before it (zeros where none is
  // kept); each further one a draft with the head's own hidden state of the row before.
  h.reserve(live.size() * d);
  for (const Drafting& l : live) {
    const bool kept = l.seq->mtp_h_pos == l.start - 1 && !l.seq->mtp_h.empty();
    if (kept) {
      h.insert(h.end(), l.seq->mtp_h.begin(), l.seq->mtp_h.end());
    } else {
      h.insert(h.end(), d, 0.0f);
    }
  }
  const Stopwatch sw;
  const int64_t bs = runner_->block_size();
  const auto n_vocab = static_cast<size_t>(runner_->n_vocab());
  int64_t steps = 0;
  model::Batch batch;
  std::vector<Drafting*> rows;
  for (int32_t depth = 0;; ++depth) {
    batch.clear();
    rows.clear();
    for (Drafting& l : live) {
      if (static_cast<int64_t>(l.seq->draft.size()) >= k[l.j]) continue;
      const int32_t pos = l.start + depth;
      const int32_t token = depth == 0 ? l.seq->tokens.back() : l.seq->draft.back();
      const int32_t idx = batch.add_seq(l.seq->table.blocks, pos + 1);
      batch.add_token(token, pos, idx, true, bs);
      rows.push_back(&l);
    }
    if (rows.empty()) break;
    Result<std::span<const float>> logits = runner_->run_mtp(batch, h);
    ++steps;
    if (!logits.ok()) break;  // a failed draft step drafts no further
    const std::span<const float> hidden = runner_->hidden_rows();
    h.assign(hidden.begin(), hidden.end());
    for (size_t r = 0; r < rows.size(); ++r) {
      rows[r]->seq->draft.push_back(rows[r]->draw.next(logits->subspan(r * n_vocab, n_vocab)));
    }
    // Only the rows still drafting go on, their hidden states in the same order.
    size_t w = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      if (static_cast<int64_t>(rows[r]->seq->draft.size()) >= k[rows[r]->j]) continue;
      if (w != r) std::copy_n(h.begin() + static_cast<long>(r * d), d, h.begin() + static_cast<long>(w * d));
      ++w;
    }
    h.resize(w * d);
  }
  stats_.draft_seconds += sw.seconds();
  stats_.n_draft_steps += steps;
  if (steps > 0) add_to_average(draft_step_seconds_, sw.seconds() / static_cast<double>(steps));
  for (Drafting& l : live) {
    k[l.j] = std::min<int64_t>(k[l.j], static_cast<int64_t>(l.seq->draft.size()));
    if (l.seq->draft.empty()) l.seq->draft_q.clear();
  }
}

void Engine::keep_mtp_hidden(const ScheduledChunk& c, int32_t kept_rows) {
  const auto d = static_cast<size_t>(runner_->n_embd());
  const std::span<const float> hidden = runner_->hidden_rows();
  const size_t row = static_cast<size_t>(c.batch_row + kept_rows - 1);
  if ((row + 1) * d > hidden.size()) return;
  c.seq->mtp_h.assign(hidden.begin() + static_cast<long>(row * d), hidden.begin() + static_cast<long>((row + 1) * d));
  c.seq->mtp_h_pos = c.start + kept_rows - 1;
}

size_t Engine::verify_draft(const ScheduledChunk& c, std::span<const float> logits) {
  Sequence& seq = *c.seq;
  const auto n_vocab = static_cast<size_t>(runner_->n_vocab());
  RequestOutput ev;
  int32_t kept = 1;  // the decoded token, then each draft the sampler picks itself
  for (int32_t i = 0; i <= c.n_draft; ++i) {
    const std::span<const float> row = logits.subspan(static_cast<size_t>(i) * n_vocab, n_vocab);
    int32_t token = 0;
    if (i < c.n_draft && !seq.draft_q.empty()) {  // the rejection rule: this draft was sampled from q
      const auto d = static_cast<size_t>(i);
      token = seq.sampler->verify_draft(row, seq.tokens, seq.draft[d], seq.draft_q[d]);
      if (seq.n_logprobs >= 0) ev.logprobs.push_back(sampling::logprobs_of(row, token, seq.n_logprobs));
    } else {
      token = sample_row(seq, row, ev);
    }
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
  if (mixed_step_) stats_.n_draft_tokens_mixed += c.n_draft;
  seq.acceptance->update(c.n_draft, accepted);
  acceptance_.update(c.n_draft, accepted);
  if (seq.draft_from >= 0) seq.prediction_hint = seq.draft_from + accepted;
  seq.draft_cap = accepted == c.n_draft ? std::min(2 * seq.draft_cap, opts_.spec_max) : std::max(1, accepted + 1);
  seq.draft.clear();
  seq.draft_q.clear();
  scheduler_->on_verified(c, kept);
  if (opts_.spec == SpecMethod::kMtp) keep_mtp_hidden(c, kept);
  if (states_.enabled()) states_.verified(c, kept, *runner_);
  deliver(seq, std::move(ev));
  return static_cast<size_t>(c.n_draft) + 1;
}

}  // namespace ridge::engine
