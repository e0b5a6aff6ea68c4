// accept_token advances the stacks directly (Grammar::advance per code point) and does not use
// the StateCache: the mask walk and this path are independent, which the tests compare.
#include "grammar/matcher.h"

#include <fmt/format.h>

#include <utility>

#include "grammar/state_cache.h"

namespace ridge::grammar {

Matcher::Matcher(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenIndex> idx)
    : g_(std::move(g)),
      idx_(std::move(idx)),
      cache_(std::make_shared<StateCache>(g_, idx_)),
      stacks_(std::make_shared<const StackSet>(g_->initial())) {}

void Matcher::fill_mask(std::vector<uint8_t>& allowed) const {
  if (finished_) {
    allowed.assign(static_cast<size_t>(idx_->n_vocab()), 0);
    return;
  }
  cache_->fill_mask(stacks_, partial_, allowed);
}

Status Matcher::accept_bytes(std::string_view bytes) {
  if (finished_) return Status::usage("grammar: generation already ended");
  StackSet cur = *stacks_, next;
  Utf8Partial p = partial_;
  for (size_t i = 0; i < bytes.size(); ++i) {
    uint32_t cp = 0;
    const Utf8Step st = utf8_feed(p, static_cast<uint8_t>(bytes[i]), &cp);
    if (st == Utf8Step::kInvalid) return Status::usage("grammar: invalid UTF-8");
    if (st == Utf8Step::kPartial) continue;
    if (!g_->advance(cur, cp, next)) {
      return Status::usage(
          fmt::format("grammar: state too large (over {} stacks or nesting "
                      "deeper than {})",
                      Grammar::kMaxStacks, Grammar::kMaxDepth));
    }
    if (next.empty()) {
      return Status::usage(fmt::format("grammar: character U+{:04X} not allowed here", cp));
    }
    cur.swap(next);
  }
  if (p.need > 0) {
    uint32_t lo = 0, hi = 0;
    utf8_completions(p, &lo, &hi);
    bool any = false;
    for (const Stack& s : cur)
      any = any || (!s.empty() && Grammar::intersects(g_->top_class(s), lo, hi));
    if (!any) return Status::usage("grammar: partial character cannot continue here");
  }
  stacks_ = std::make_shared<const StackSet>(std::move(cur));
  partial_ = p;
  return ok_status();
}

Status Matcher::accept_token(int32_t id) {
  if (id < 0 || id >= idx_->n_vocab()) {
    return Status::usage(fmt::format("grammar: token {} outside the vocabulary", id));
  }
  if (finished_) return Status::usage("grammar: generation already ended");
  if (idx_->is_eog(id)) {
    if (!is_complete()) {
      return Status::usage(
          fmt::format("grammar: end-of-generation token {} before the output "
                      "is complete",
                      id));
    }
    finished_ = true;
    return ok_status();
  }
  const std::string& bytes = idx_->bytes(id);
  if (bytes.empty()) {
    return Status::usage(fmt::format("grammar: token {} has no text (control token)", id));
  }
  Status s = accept_bytes(bytes);
  if (s.ok()) return s;
  std::string_view why = s.message();
  if (why.starts_with("grammar: ")) why.remove_prefix(9);
  return Status::usage(fmt::format("grammar: token {} not allowed: {}", id, why));
}

bool Matcher::is_complete() const {
  if (finished_) return true;
  if (partial_.need > 0) return false;
  for (const Stack& s : *stacks_) {
    if (s.empty()) return true;
  }
  return false;
}

bool Matcher::can_continue() const {
  if (finished_) return false;
  if (partial_.need > 0) return true;
  for (const Stack& s : *stacks_) {
    if (!s.empty()) return true;
  }
  return false;
}

}  // namespace ridge::grammar
