// Speculative decoding's draft-model proposer (`--draft FILE.gguf`, docs/speculative.md): a
// smaller model with the same vocabulary, run greedily on a session of its own that follows the
// target's text; it proposes its next k tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "engine/session.h"
#include "sampling/sampler.h"

namespace ridge::cli {

// Loads a draft model for `target`: refused with one line when the vocabularies differ (token
// strings compared id by id) or it keeps recurrent state. flag: the option named in errors.
Result<model::Model> load_draft_model(const std::string& path, const model::Model& target,
                                      const kernels::Kernels& kernels, std::string_view flag = "--draft");

// The --spec / --draft / --spec-rule flags of every generating command: --spec ngram or draft,
// --draft with draft (it implies it when --spec is not given), --spec-rule auto, match or
// rejection (which needs a draft model). Usage errors name the flags.
inline constexpr const char* kSpecRuleHelp =
    "verification: match (greedy drafts, output identical to plain decoding seed for seed), rejection "
    "(sampled drafts kept with probability min(1, p/q): the same distribution, more drafts kept), auto "
    "(rejection with a draft model at temperature > 0)";
Status check_spec_flags(std::string_view method, const std::string& draft_path, std::string_view rule);

class DraftModel {
 public:
  // Loads `path` for drafting beside `target` (same context, KV type and threads as its
  // session): refused with one line when the vocabularies differ or it keeps recurrent state.
  static Result<std::unique_ptr<DraftModel>> load(const std::string& path, const model::Model& target,
                                                  const kernels::Kernels& kernels,
                                                  const engine::SessionOptions& opts,
                                                  std::shared_ptr<ThreadPool> pool);

  // Up to k tokens after `history` (the target's text, its newest token included), evaluating
  // what of it the draft's cache lacks first (at most room tokens in all). Greedy without a
  // sampler; with one, each token is drawn from the sampler's distribution of the draft's logits
  // (the text and the drafts so far as its history) and that distribution goes to q, for the
  // rejection rule (Sampler::verify_draft). The draft's cache first drops what no longer matches
  // the text (rejected drafts, a chat's rewritten turn).
  Result<std::vector<int32_t>> propose(std::span<const int32_t> history, int64_t k,
                                       sampling::Sampler* sampler = nullptr,
                                       std::vector<std::vector<sampling::TokenProb>>* q = nullptr);

  const model::Model& model() const { return *model_; }

 private:
  void keep(int64_t n);  // the first n cached tokens
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<engine::Session> session_;
  std::vector<int32_t> cached_;  // the tokens in the draft's cache, in order
};

}  // namespace ridge::cli
