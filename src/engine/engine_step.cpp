// One engine step: schedule -> flat batch -> forward -> sample -> stream -> free finished.
#include <algorithm>

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

void Engine::process_outputs(const SchedulerOutput& out, std::span<const float> logits) {
  const auto n_vocab = static_cast<size_t>(runner_->n_vocab());
  size_t row = 0;
  for (const ScheduledChunk& c : out.chunks) {
    if (!c.need_logits) continue;
    Sequence& seq = *c.seq;
    const std::span<const float> row_logits = logits.subspan(row * n_vocab, n_vocab);
    ++row;
    RequestOutput ev;
    int32_t token = 0;
    if (seq.n_logprobs >= 0) {
      sampling::SampleResult r = seq.sampler->sample_with_logprobs(row_logits, seq.tokens, seq.n_logprobs);
      token = r.token;
      ev.logprobs.push_back(std::move(r));
    } else {
      token = seq.sampler->sample(row_logits, seq.tokens);
    }
    ev.tokens.push_back(token);
    ev.finish = append_token(seq, token, ev.text);
    deliver(seq, std::move(ev));
  }
}

bool Engine::step() {
  take_inbox();
  const SchedulerOutput out = scheduler_->schedule();
  if (out.empty()) {
    publish_stats();
    return false;
  }
  const int64_t bs = runner_->block_size();
  batch_.clear();
  for (const ScheduledChunk& c : out.chunks) {
    const Sequence& s = *c.seq;
    const int32_t idx = batch_.add_seq(s.table.blocks, c.start + c.n_new);
    for (int32_t j = 0; j < c.n_new; ++j) {
      const int32_t pos = c.start + j;
      batch_.add_token(s.tokens[static_cast<size_t>(pos)], pos, idx, c.need_logits && j + 1 == c.n_new, bs);
    }
  }
  const Stopwatch sw;
  Result<std::span<const float>> logits = runner_->run(batch_);
  if (!logits.ok()) {
    // Nothing was published to the prefix cache; the sequences of this step end with the error.
    for (const ScheduledChunk& c : out.chunks) finish(*c.seq, FinishReason::kError, logits.status().message());
    publish_stats();
    return true;
  }
  scheduler_->on_computed(out);
  stats_.n_steps += 1;
  for (const ScheduledChunk& c : out.chunks) stats_.n_prompt_tokens += c.n_new == 1 && c.start >= c.seq->n_prompt ? 0 : c.n_new;
  if (cost_) {
    std::vector<model::SeqWork> work;
    work.reserve(out.chunks.size());
    for (const ScheduledChunk& c : out.chunks) work.push_back({c.start, c.n_new});
    stats_.bytes_moved += model::cost_of_step(*cost_, work).bytes();
  }
  process_outputs(out, *logits);
  stats_.busy_seconds += sw.seconds();
  publish_stats();
  return true;
}

}  // namespace ridge::engine
