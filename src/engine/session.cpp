#include "engine/session.h"

#include <algorithm>

#include "sampling/draft_draw.h"

namespace ridge::engine {

Result<Session> Session::create(const model::Model& model, const SessionOptions& o,
                                std::shared_ptr<ThreadPool> pool) {
  const model::ModelConfig& cfg = model.config();
  const int64_t n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min<int64_t>(cfg.n_ctx_train, 4096);
  if (o.n_ctx < 0 || o.block_size <= 0 || o.max_batch <= 0 || o.max_outputs <= 0 || o.n_threads <= 0) {
    return usage_error("session: invalid options (context {}, block size {}, batch {}, threads {})",
                       o.n_ctx, o.block_size, o.max_batch, o.n_threads);
  }
  if (n_ctx > (int64_t{1} << 24)) return usage_error("context {} is too large", n_ctx);
  if (pool && pool->size() > o.n_threads) {
    return usage_error("session: a pool of {} threads lent to a session of {}", pool->size(),
                       o.n_threads);
  }
  const int64_t n_blocks = (n_ctx + o.block_size - 1) / o.block_size;
  // A model with recurrent state keeps slots for its checkpoint and for the state after each row
  // of an eval with all logits (truncate).
  const int64_t max_rows = o.keep_row_states && cfg.n_recurrent_layers() > 0 ? std::min(o.max_outputs, n_ctx) : 0;
  ModelRunnerOptions ro;
  ro.n_blocks = n_blocks;
  ro.block_size = o.block_size;
  ro.kv_type = o.kv_type;
  ro.max_tokens = std::min(o.max_batch, n_ctx);
  ro.max_outputs = std::min(o.max_outputs, ro.max_tokens);
  ro.max_context = n_ctx;
  ro.n_threads = o.n_threads;
  ro.n_state_slots = 2 + max_rows;
  ro.backend = o.backend;
  ro.mtp = o.mtp;
  // The window ring: a step's window blocks with the truncation slack, and one spare.
  const bool ring = !o.swa_full && model.has_window_space();
  if (ring) {
    ro.n_window_blocks = std::min(n_blocks, kv::window_blocks_for(cfg.n_swa, ro.max_tokens + kTruncateSlack, o.block_size) + 1);
  }
  RIDGE_ASSIGN_OR_RETURN(std::unique_ptr<ModelRunner> runner,
                         ModelRunner::create(model, ro, std::move(pool)));
  Session s(model, std::move(runner));
  s.n_ctx_ = n_ctx;
  s.max_tokens_ = ro.max_tokens;
  s.max_outputs_ = ro.max_outputs;
  s.max_rows_ = max_rows;
  s.mtp_ = o.mtp;
  s.zeros_.assign(o.mtp ? static_cast<size_t>(cfg.n_embd) : 0, 0.0f);
  s.table_.resize(static_cast<size_t>(n_blocks));
  for (int64_t i = 0; i < n_blocks; ++i) s.table_[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  if (ring) {
    s.n_window_blocks_ = ro.n_window_blocks;
    s.window_ = cfg.n_swa;
    s.window_table_.resize(s.table_.size());
  }
  return s;
}

const std::vector<int32_t>& Session::window_table(int64_t from) {
  const int64_t first = kv::first_window_block(from, window_, runner_->block_size());
  for (size_t b = 0; b < window_table_.size(); ++b) {
    const auto bi = static_cast<int64_t>(b);
    window_table_[b] = bi < first ? kv::kNoBlock : static_cast<int32_t>(bi % n_window_blocks_);
  }
  return window_table_;
}

bool Session::ring_holds(int64_t n) const {
  if (n_window_blocks_ == 0 || n_written_ == 0) return true;
  const int64_t bs = runner_->block_size();
  return (n_written_ - 1) / bs - kv::first_window_block(n, window_, bs) < n_window_blocks_;
}

int64_t Session::truncate(int64_t n) {
  if (n >= n_past_) return n_past_;
  if (!ring_holds(n)) {
    reset();
    return 0;
  }
  if (model_->config().n_recurrent_layers() == 0) {
    n_past_ = std::max<int64_t>(n, 0);
    return n_past_;
  }
  if (n > rows_from_ && n < rows_from_ + n_rows_) {
    runner_->copy_state(static_cast<int32_t>(2 + (n - rows_from_ - 1)), 0);
    n_past_ = n;
  } else if (checkpoint_ > 0 && checkpoint_ <= n) {
    runner_->copy_state(1, 0);
    n_past_ = checkpoint_;
  } else {
    n_past_ = 0;
  }
  if (checkpoint_ > n_past_) checkpoint_ = 0;  // positions before it will be overwritten
  n_rows_ = 0;
  return n_past_;
}

std::span<const float> Session::mtp_h_before(int64_t pos) {
  if (pos - 1 == mtp_h_pos_ && !mtp_h_.empty()) return mtp_h_;
  const auto d = static_cast<int64_t>(zeros_.size());
  const int64_t row = pos - 1 - mtp_rows_from_;
  if (row >= 0 && (row + 1) * d <= static_cast<int64_t>(mtp_rows_.size())) {
    return std::span<const float>(mtp_rows_).subspan(static_cast<size_t>(row * d), static_cast<size_t>(d));
  }
  return zeros_;
}

void Session::keep_mtp_rows(bool first_step, bool all_rows) {
  const std::span<const float> rows = runner_->hidden_rows();
  const size_t d = zeros_.size();
  if (first_step) {
    mtp_rows_.clear();
    mtp_rows_from_ = n_past_;
  }
  if (all_rows) mtp_rows_.insert(mtp_rows_.end(), rows.begin(), rows.end());
  mtp_h_.assign(rows.end() - static_cast<long>(d), rows.end());
  mtp_h_pos_ = n_past_ + static_cast<int64_t>(rows.size() / d) - 1;
}

Result<std::vector<int32_t>> Session::draft_mtp(std::span<const int32_t> text, int64_t k, sampling::Sampler* sampler,
                                                std::vector<std::vector<sampling::TokenProb>>* q) {
  if (!mtp_) return error("draft_mtp: the session was made without the MTP head");
  if (text.empty() || k < 0 || n_past_ + k > n_ctx_) {
    return error("draft_mtp: {} drafts after {} positions of {}", k, n_past_, n_ctx_);
  }
  const int32_t token = text.back();
  if (q != nullptr) q->clear();
  sampling::DraftDraw draw(sampler, text, q);
  std::vector<int32_t> out;
  std::vector<float> h(mtp_h_before(n_past_).begin(), mtp_h_before(n_past_).end());
  for (int64_t i = 0; i < k; ++i) {
    const auto pos = static_cast<int32_t>(n_past_ + i);
    batch_.clear();
    batch_.add_seq(table_, pos + 1);
    batch_.add_token(i == 0 ? token : out.back(), pos, 0, true, runner_->block_size());
    RIDGE_ASSIGN_OR_RETURN(std::span<const float> logits, runner_->run_mtp(batch_, h));
    out.push_back(draw.next(logits));
    const std::span<const float> next = runner_->hidden_rows();
    h.assign(next.begin(), next.end());
  }
  return out;
}

Result<std::span<const float>> Session::eval(std::span<const int32_t> tokens, bool all_logits) {
  const auto n = static_cast<int64_t>(tokens.size());
  if (n == 0) return error("eval: no tokens");
  if (n_past_ + n > n_ctx_) {
    return error("{} tokens do not fit in the context: {} of {} positions are used", n, n_past_,
                 n_ctx_);
  }
  const int64_t n_vocab = model_->config().n_vocab;
  const int64_t chunk = all_logits ? std::min(max_tokens_, max_outputs_) : max_tokens_;
  if (all_logits) all_.resize(static_cast<size_t>(n * n_vocab));
  const int64_t start = n_past_;
  const bool recurrent = model_->config().n_recurrent_layers() > 0;
  // The state after each row, where truncate() may want it back.
  const bool keep_rows = recurrent && all_logits && n <= max_rows_;
  n_rows_ = 0;
  std::span<const float> logits;
  for (int64_t i = 0; i < n; i += chunk) {
    const int64_t m = std::min(chunk, n - i);
    batch_.clear();
    const auto ctx = static_cast<int32_t>(n_past_ + m);
    if (n_window_blocks_ > 0) {
      batch_.add_seq(table_, ctx, 0, window_table(n_past_));
    } else {
      batch_.add_seq(table_, ctx, 0);
    }
    if (mtp_) {
      const std::span<const float> before = mtp_h_before(n_past_);
      batch_.mtp_h.assign(before.begin(), before.end());
    }
    for (int64_t j = 0; j < m; ++j) {
      const bool out = all_logits || i + j == n - 1;
      batch_.add_token(tokens[static_cast<size_t>(i + j)], static_cast<int32_t>(n_past_ + j), 0,
                       out, runner_->block_size());
      // (After the last row the state is the live one: no copy.)
      if (keep_rows && i + j + 1 < n) {
        batch_.state_snapshots.push_back({0, static_cast<int32_t>(n_past_ + j + 1), static_cast<int32_t>(2 + i + j)});
      }
    }
    auto r = runner_->run(batch_);
    if (!r.ok()) {
      n_past_ = start;
      return r.status();
    }
    logits = *r;
    if (all_logits) std::copy(logits.begin(), logits.end(), all_.begin() + i * n_vocab);
    if (mtp_) keep_mtp_rows(i == 0, all_logits);
    n_past_ += m;
    n_written_ = std::max(n_written_, n_past_);
  }
  if (keep_rows) {
    rows_from_ = start;
    n_rows_ = n;
  } else if (recurrent && n > 1 && !all_logits) {
    runner_->copy_state(0, 1);
    checkpoint_ = n_past_;
  }
  if (all_logits) return std::span<const float>(all_);
  return logits;
}

}  // namespace ridge::engine
