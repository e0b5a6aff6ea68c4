// One engine step: schedule -> flat batch -> forward -> sample -> stream -> free finished.
#include <algorithm>
#include <cmath>

#include "base/timer.h"
#include "engine/engine.h"
#include "engine/engine_inbox.h"
#include "engine/scheduler.h"

namespace ridge::engine {

void Engine::deliver(Sequence& seq, RequestOutput out) {
  const bool done = out.finished();
  if (done) seq.stats.finish_time = now_seconds();
  out.id = seq.id;
  out.stats = seq.stats;
  if (seq.on_output) seq.on_output(out);
  if (!done) return;
  stats_.n_requests_finished += 1;
  auto removed = scheduler_->remove(seq.id);  // frees the blocks; destroyed here
  if (drafter_) drafter_->release(seq.id);
  std::lock_guard lock(inbox_->mu);
  inbox_->n_live -= 1;
}

void Engine::finish(Sequence& seq, FinishReason reason, std::string error) {
  RequestOutput out;
  out.finish = reason;
  out.error = std::move(error);
  deliver(seq, std::move(out));
}

std::string Engine::flush_text(Sequence& seq) {
  if (!seq.detok) return {};
  std::string rest = seq.detok->flush();
  if (!seq.stop) return rest;
  sampling::StopMatcher::Output o = seq.stop->push(rest);
  return o.stopped ? o.text : o.text + seq.stop->flush();
}

FinishReason Engine::append_token(Sequence& seq, int32_t token, std::string& text) {
  seq.tokens.push_back(token);
  const double now = now_seconds();
  if (seq.stats.first_token_time == 0) seq.stats.first_token_time = now;
  seq.stats.last_token_time = now;
  seq.stats.n_completion_tokens = seq.n_generated();
  stats_.n_generated_tokens += 1;
  const bool stop_token =
      std::find(seq.stop_token_ids.begin(), seq.stop_token_ids.end(), token) != seq.stop_token_ids.end() ||
      (!seq.ignore_eos && tokenizer_ != nullptr && tokenizer_->is_eog(token));
  if (stop_token) {  // its text is not part of the output
    text = flush_text(seq);
    return FinishReason::kStop;
  }
  if (seq.detok) {
    std::string piece = seq.detok->push(token);
    if (seq.stop) {
      sampling::StopMatcher::Output o = seq.stop->push(piece);
      text = std::move(o.text);
      if (o.stopped) return FinishReason::kStop;
    } else {
      text = std::move(piece);
    }
  }
  if (seq.n_generated() >= seq.max_tokens || seq.n_tokens() >= opts_.max_model_len) {
    text += flush_text(seq);
    return FinishReason::kLength;
  }
  return FinishReason::kNone;
}

int32_t Engine::sample_constrained(Sequence& seq, std::span<const float> logits,
                                   RequestOutput& ev) {
  seq.matcher->fill_mask(mask_);
  int32_t token = 0;
  if (seq.n_logprobs >= 0) {
    sampling::SampleResult r = seq.sampler->sample_with_logprobs(logits, seq.tokens, seq.n_logprobs, mask_);
    token = r.token;
    ev.logprobs.push_back(std::move(r));
  } else {
    token = seq.sampler->sample(logits, seq.tokens, mask_);
  }
  // The sampler returns a banned token only when every token is banned (a dead end of the
  // grammar in this vocabulary): one lookup instead of a scan of the mask.
  if (mask_[static_cast<size_t>(token)] == 0) {
    ev.finish = FinishReason::kError;
    ev.error = "the grammar allows no token of this vocabulary here";
    return token;
  }
  if (Status s = seq.matcher->accept_token(token); !s.ok()) {
    ev.finish = FinishReason::kError;
    ev.error = s.message();
  }
  return token;
}

int32_t Engine::sample_row(Sequence& seq, std::span<const float> logits, RequestOutput& ev) {
  if (seq.matcher) return sample_constrained(seq, logits, ev);
  if (seq.n_logprobs < 0) return seq.sampler->sample(logits, seq.tokens);
  sampling::SampleResult r = seq.sampler->sample_with_logprobs(logits, seq.tokens, seq.n_logprobs);
  const int32_t token = r.token;
  ev.logprobs.push_back(std::move(r));
  return token;
}

bool Engine::decodes_only(const SchedulerOutput& out) {
  return std::all_of(out.chunks.begin(), out.chunks.end(), [](const ScheduledChunk& c) {
    return c.n_new == 1 + c.n_draft && c.need_logits && c.seq->n_generated() > 0;
  });
}

bool Engine::needs_row(int32_t pos, int32_t end, bool chunk_ends_prompt) const {
  switch (opts_.pooling) {
    case model::Pooling::kMean: return true;
    case model::Pooling::kCls: return pos == 0;
    default: return chunk_ends_prompt && pos + 1 == end;
  }
}

void Engine::process_embeddings(const SchedulerOutput& out, std::span<const float> hidden) {
  const auto d = static_cast<size_t>(runner_->n_embd());
  size_t row = 0;
  for (const ScheduledChunk& c : out.chunks) {
    Sequence& seq = *c.seq;
    if (c.start == 0 || seq.pooled.empty()) seq.pooled.assign(d, 0.0f);  // fresh or recomputed
    const int32_t end = c.start + c.n_new;
    for (int32_t pos = c.start; pos < end; ++pos) {
      if (!needs_row(pos, end, c.need_logits)) continue;
      const float* h = hidden.data() + row * d;
      ++row;
      // Mean: a running sum in token order (the same order whatever the batch); cls / last:
      // the one row.
      for (size_t i = 0; i < d; ++i) {
        seq.pooled[i] = opts_.pooling == model::Pooling::kMean ? seq.pooled[i] + h[i] : h[i];
      }
    }
    if (!c.need_logits) continue;  // the prompt goes on in a later step
    if (opts_.pooling == model::Pooling::kMean) {
      for (float& v : seq.pooled) v /= static_cast<float>(seq.n_prompt);
    }
    double norm = 0;
    for (float v : seq.pooled) norm += static_cast<double>(v) * v;
    const float inv = norm > 0 ? static_cast<float>(1.0 / std::sqrt(norm)) : 0.0f;
    RequestOutput ev;
    ev.embedding.resize(d);
    for (size_t i = 0; i < d; ++i) ev.embedding[i] = seq.pooled[i] * inv;
    ev.finish = FinishReason::kStop;
    deliver(seq, std::move(ev));
  }
}

void Engine::process_outputs(const SchedulerOutput& out, std::span<const float> logits) {
  const auto n_vocab = static_cast<size_t>(runner_->n_vocab());
  size_t row = 0;
  for (const ScheduledChunk& c : out.chunks) {
    if (!c.need_logits) continue;
    if (c.n_draft > 0) {
      row += verify_draft(c, logits.subspan(row * n_vocab));
      continue;
    }
    Sequence& seq = *c.seq;
    RequestOutput ev;
    const int32_t token = sample_row(seq, logits.subspan(row * n_vocab, n_vocab), ev);
    ++row;
    if (ev.finish == FinishReason::kError) {
      finish(seq, FinishReason::kError, std::move(ev.error));
      continue;
    }
    ev.tokens.push_back(token);
    ev.finish = append_token(seq, token, ev.text);
    deliver(seq, std::move(ev));
  }
}

bool Engine::step() {
  take_inbox();
  SchedulerOutput out = scheduler_->schedule();
  if (out.empty()) {
    publish_stats();
    return false;
  }
  // Every step may draft (a prompt chunk's leaves room); decode-only steps are timed, and a
  // verified draft keeps a step decode-only.
  const bool decode_only = decodes_only(out);
  mixed_step_ = !decode_only;
  const bool timed = step_times_ && decode_only;
  if (step_times_) add_drafts(out, decode_only);
  const int64_t bs = runner_->block_size();
  batch_.clear();
  if (states_.enabled()) {
    states_.begin_step(scheduler_->running());
    // Every live slot (and cached state copied in) before any snapshot may evict a cached state.
    for (const ScheduledChunk& c : out.chunks) states_.live_slot(c, *runner_);
  }
  const bool mtp = opts_.spec == SpecMethod::kMtp;
  const auto d = static_cast<size_t>(runner_->n_embd());
  for (ScheduledChunk& c : out.chunks) {
    const Sequence& s = *c.seq;
    c.batch_row = static_cast<int32_t>(batch_.n_tokens());
    if (mtp) {  // the hidden state before the chunk's first token, for the MTP head's layer
      const bool kept = s.mtp_h_pos == c.start - 1 && !s.mtp_h.empty();
      if (kept) {
        batch_.mtp_h.insert(batch_.mtp_h.end(), s.mtp_h.begin(), s.mtp_h.end());
      } else {
        batch_.mtp_h.insert(batch_.mtp_h.end(), d, 0.0f);
      }
    }
    const int32_t idx = batch_.add_seq(s.table.blocks, c.start + c.n_new, states_.enabled() ? s.state_slot : -1,
                                       s.table.window_blocks);
    if (states_.enabled()) states_.plan_snapshots(c, idx, batch_);
    for (int32_t j = 0; j < c.n_new; ++j) {
      const int32_t pos = c.start + j;
      const bool drafted = pos >= s.n_tokens();
      batch_.add_token(drafted ? s.draft[static_cast<size_t>(pos - s.n_tokens())] : s.tokens[static_cast<size_t>(pos)],
                       pos, idx, c.n_draft > 0 || needs_row(pos, c.start + c.n_new, c.need_logits), bs);
    }
  }
  batch_.output_hidden = opts_.pooling != model::Pooling::kNone;
  const Stopwatch sw;
  Result<std::span<const float>> logits = runner_->run(batch_);
  if (states_.enabled()) states_.end_step(logits.ok());
  if (!logits.ok()) {
    // Nothing was published to the prefix cache; the sequences of this step end with the error.
    for (const ScheduledChunk& c : out.chunks) finish(*c.seq, FinishReason::kError, logits.status().message());
    publish_stats();
    return true;
  }
  scheduler_->on_computed(out);
  if (mtp) {
    for (const ScheduledChunk& c : out.chunks) {
      if (c.n_draft == 0) keep_mtp_hidden(c, c.n_new);  // a verified chunk's once its kept rows are known
    }
  }
  stats_.n_steps += 1;
  for (const ScheduledChunk& c : out.chunks) {
    const bool decode = c.n_draft > 0 || (c.n_new == 1 && c.start >= c.seq->n_prompt);
    stats_.n_prompt_tokens += decode ? 0 : c.n_new;
  }
  if (timed) {
    step_times_->record(out.n_tokens, sw.seconds(), model_step_time(out));
    add_to_average(target_step_seconds_, sw.seconds());
  }
  if (cost_) {
    std::vector<model::SeqWork> work;
    work.reserve(out.chunks.size());
    for (const ScheduledChunk& c : out.chunks) work.push_back({c.start, c.n_new});
    // An MoE step counts the experts its router really chose (empty for dense models).
    stats_.bytes_moved += model::cost_of_step(*cost_, work, runner_->experts_run()).bytes();
  }
  if (batch_.output_hidden) {
    process_embeddings(out, *logits);
  } else {
    process_outputs(out, *logits);
  }
  stats_.busy_seconds += sw.seconds();
  publish_stats();
  return true;
}

}  // namespace ridge::engine
