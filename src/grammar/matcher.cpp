// accept_token advances the stacks directly (Grammar::advance per code point, advance_token for
// token elements) and does not use the StateCache: the mask walk and this path are independent,
// which the tests compare.
#include "grammar/matcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "grammar/state_cache.h"

namespace ridge::grammar {

Matcher::Matcher(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenIndex> idx)
    : g_(std::move(g)),
      idx_(std::move(idx)),
      cache_(std::make_shared<StateCache>(g_, idx_)),
      stacks_(std::make_shared<const StackSet>(g_->initial())) {}

Matcher::Matcher(std::shared_ptr<StateCache> cache)
    : g_(cache->grammar()),
      idx_(cache->token_index()),
      cache_(std::move(cache)),
      stacks_(std::make_shared<const StackSet>(g_->initial())) {}

void Matcher::fill_mask(std::vector<uint8_t>& allowed) const {
  if (finished_) {
    allowed.assign(static_cast<size_t>(idx_->n_vocab()), 0);
    return;
  }
  cache_->fill_mask(stacks_, partial_, allowed);
}

Status Matcher::advance_text(std::string_view bytes, StackSet& cur, Utf8Partial& p) const {
  StackSet next;
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
    for (const Stack& s : cur) {
      any = any || (!s.empty() && !g_->top_is_token(s) &&
                    Grammar::intersects(g_->top_class(s), lo, hi));
    }
    if (!any) return Status::usage("grammar: partial character cannot continue here");
  }
  return ok_status();
}

Status Matcher::accept_bytes(std::string_view bytes) {
  if (finished_) return Status::usage("grammar: generation already ended");
  StackSet cur = *stacks_;
  Utf8Partial p = partial_;
  RIDGE_RETURN_IF_ERROR(advance_text(bytes, cur, p));
  stacks_ = std::make_shared<const StackSet>(std::move(cur));
  partial_ = p;
  return ok_status();
}

Status Matcher::accept_token(int32_t id) {
  if (id < 0 || id >= idx_->n_vocab()) {
    return Status::usage(fmt::format("grammar: token {} outside the vocabulary", id));
  }
  if (finished_) return Status::usage("grammar: generation already ended");
  const bool eog = idx_->is_eog(id);
  // The token as a token element (only between characters).
  StackSet by_token;
  if (g_->has_tokens() && partial_.need == 0 &&
      !g_->advance_token(*stacks_, id, eog, by_token)) {
    return Status::usage(fmt::format("grammar: token {} not allowed: state too large", id));
  }
  if (eog) {
    if (!by_token.empty()) {
      stacks_ = std::make_shared<const StackSet>(std::move(by_token));
      return ok_status();
    }
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
    if (by_token.empty()) {
      return Status::usage(fmt::format("grammar: token {} (a control token) not allowed here", id));
    }
    stacks_ = std::make_shared<const StackSet>(std::move(by_token));
    return ok_status();
  }
  // The token as text; both readings may hold. A text reading that ends inside a character
  // cannot share the state with the token reading (which ends between characters): the token
  // reading wins then.
  StackSet cur = *stacks_;
  Utf8Partial p = partial_;
  Status s = advance_text(bytes, cur, p);
  if (!by_token.empty() && (!s.ok() || p.need > 0)) {
    stacks_ = std::make_shared<const StackSet>(std::move(by_token));
    partial_ = Utf8Partial{};
    return ok_status();
  }
  if (!s.ok()) {
    std::string_view why = s.message();
    if (why.starts_with("grammar: ")) why.remove_prefix(9);
    return Status::usage(fmt::format("grammar: token {} not allowed: {}", id, why));
  }
  if (!by_token.empty()) {
    cur.insert(cur.end(), by_token.begin(), by_token.end());
    std::sort(cur.begin(), cur.end());
    cur.erase(std::unique(cur.begin(), cur.end()), cur.end());
    if (cur.size() > Grammar::kMaxStacks) {
      return Status::usage(fmt::format("grammar: token {} not allowed: state too large", id));
    }
  }
  stacks_ = std::make_shared<const StackSet>(std::move(cur));
  partial_ = p;
  return ok_status();
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
