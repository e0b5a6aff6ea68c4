#include "cli/draft_model.h"

#include <algorithm>

#include "gguf/reader.h"
#include "sampling/draft_draw.h"

namespace ridge::cli {
namespace {

// Same token strings under the same ids, or one line saying where they differ.
Status same_vocabulary(const gguf::File& target, const gguf::File& draft, std::string_view flag) {
  auto a = target.get_string_array("tokenizer.ggml.tokens");
  auto b = draft.get_string_array("tokenizer.ggml.tokens");
  if (!a.ok() || !b.ok()) return usage_error("{}: both models need a tokenizer (tokenizer.ggml.tokens)", flag);
  if (a->size() != b->size()) {
    return usage_error("{}: the draft's vocabulary has {} tokens, the model's {}", flag, b->size(), a->size());
  }
  for (size_t i = 0; i < a->size(); ++i) {
    if ((*a)[i] != (*b)[i]) {
      return usage_error("{}: the vocabularies differ at token {} ('{}' in the model, '{}' in the draft)",
                         flag, i, (*a)[i], (*b)[i]);
    }
  }
  return ok_status();
}

}  // namespace

Status check_spec_flags(std::string_view method, const std::string& draft_path, std::string_view rule) {
  if (rule != "auto" && rule != "match" && rule != "rejection") {
    return usage_error("--spec-rule must be auto, match or rejection, got '{}'", rule);
  }
  if (method.empty()) return usage_error("--spec-rule goes with speculative decoding (--spec ngram|mtp or --draft)");
  if (rule == "rejection" && method != "draft" && method != "mtp") {
    return usage_error("--spec-rule rejection needs a draft model (--draft) or an MTP head (--spec mtp): "
                       "other drafts are certain tokens, which the match rule verifies exactly");
  }
  if (method != "ngram" && method != "draft" && method != "mtp") {
    return usage_error("--spec must be ngram, draft or mtp, got '{}'", method);
  }
  if (method == "mtp" && !draft_path.empty()) return usage_error("--draft goes with --spec draft, not mtp");
  if (method == "draft" && draft_path.empty()) return usage_error("--spec draft needs --draft FILE.gguf");
  if (method == "ngram" && !draft_path.empty()) return usage_error("--draft goes with --spec draft, not ngram");
  return ok_status();
}

Result<model::Model> load_draft_model(const std::string& path, const model::Model& target,
                                      const kernels::Kernels& kernels, std::string_view flag) {
  RIDGE_ASSIGN_OR_RETURN(model::Model m, model::Model::load(path, kernels));
  RIDGE_RETURN_IF_ERROR(same_vocabulary(target.file(), m.file(), flag));
  if (m.config().n_vocab != target.config().n_vocab) {
    return usage_error("{}: the draft's output has {} rows, the model's {}", flag, m.config().n_vocab,
                       target.config().n_vocab);
  }
  if (m.config().n_recurrent_layers() > 0) {
    return usage_error("{}: not supported yet: a draft model with recurrent state ({})", flag, m.config().arch);
  }
  return m;
}

Result<std::unique_ptr<DraftModel>> DraftModel::load(const std::string& path, const model::Model& target,
                                                     const kernels::Kernels& kernels,
                                                     const engine::SessionOptions& opts,
                                                     std::shared_ptr<ThreadPool> pool) {
  RIDGE_ASSIGN_OR_RETURN(model::Model m, load_draft_model(path, target, kernels));
  auto d = std::unique_ptr<DraftModel>(new DraftModel());
  d->model_ = std::make_unique<model::Model>(std::move(m));
  engine::SessionOptions so = opts;
  so.max_outputs = 1;
  RIDGE_ASSIGN_OR_RETURN(engine::Session s, engine::Session::create(*d->model_, so, std::move(pool)));
  d->session_ = std::make_unique<engine::Session>(std::move(s));
  return d;
}

Result<std::vector<int32_t>> DraftModel::propose(std::span<const int32_t> history, int64_t k,
                                                 sampling::Sampler* sampler,
                                                 std::vector<std::vector<sampling::TokenProb>>* q) {
  sampling::DraftDraw draw(sampler, history, q);
  // The cache keeps the longest prefix it shares with the text (a chat may have rewritten it).
  const auto shared = static_cast<int64_t>(
      std::mismatch(cached_.begin(), cached_.end(), history.begin(), history.end()).first - cached_.begin());
  keep(shared);
  std::vector<int32_t> out;
  const int64_t room = session_->n_ctx() - static_cast<int64_t>(history.size());
  k = std::min(k, room);
  if (k <= 0 || static_cast<int64_t>(cached_.size()) >= static_cast<int64_t>(history.size())) return out;
  const auto fresh = history.subspan(cached_.size());
  RIDGE_ASSIGN_OR_RETURN(std::span<const float> logits, session_->eval(fresh));
  cached_.insert(cached_.end(), fresh.begin(), fresh.end());
  while (true) {
    const int32_t t = draw.next(logits);
    out.push_back(t);
    if (static_cast<int64_t>(out.size()) >= k) break;
    RIDGE_ASSIGN_OR_RETURN(logits, session_->eval(std::span<const int32_t>(&t, 1)));
    cached_.push_back(t);
  }
  return out;
}

void DraftModel::keep(int64_t n) {
  cached_.resize(static_cast<size_t>(session_->truncate(std::min<int64_t>(n, static_cast<int64_t>(cached_.size())))));
}

}  // namespace ridge::cli
