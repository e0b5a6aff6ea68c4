#include "quality/mix_search.h"

#include <algorithm>
#include <map>
#include <memory>
#include <regex>

#include "gguf/writer.h"
#include "kernels/quant/quants.h"

namespace ridge::quality {
namespace {

// An exact-name --tensor-type pattern (a regex anchored at both ends, dots escaped).
std::string exact(const std::string& name) {
  std::string p = "^";
  for (char c : name) {
    if (c == '.' || c == '+' || c == '(' || c == ')' || c == '[' || c == ']') p += '\\';
    p += c;
  }
  return p + "$";
}

// Layer of a "blk.N...." name, or -1.
int64_t layer_of(const std::string& name) {
  int64_t l = -1;
  return std::sscanf(name.c_str(), "blk.%ld.", &l) == 1 ? l : -1;
}

std::string kind_of(const std::string& name) {
  if (layer_of(name) < 0) return name;
  return name.substr(name.find('.', 4) + 1);
}

class Evaluator {
 public:
  Evaluator(const gguf::File& in, const kernels::Kernels& k, const BaseDistributions& base,
            std::span<const int32_t> tokens, const PerplexityOptions& o, offline::QuantMix mix,
            const MixSearchOptions& opt, ThreadPool& pool)
      : in_(in), k_(k), base_(base), tokens_(tokens), o_(o), mix_(mix), opt_(opt), pool_(pool) {}

  Result<offline::QuantizePlan> plan(const std::vector<offline::TensorTypeOverride>& overrides) const {
    offline::QuantizeOptions qo;
    qo.mix.mix = mix_;
    qo.mix.overrides = overrides;
    qo.n_threads = opt_.n_threads;
    qo.importance = opt_.importance;
    return offline::plan_quantization(in_, qo);
  }

  // The KLD of the copy `p` makes (quantized in memory).
  Result<double> kld(const offline::QuantizePlan& p) {
    gguf::Writer w(in_.alignment());
    RIDGE_RETURN_IF_ERROR(offline::add_quantized_model(in_, p, opt_.n_threads, w));
    RIDGE_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, w.write_to_memory());
    RIDGE_ASSIGN_OR_RETURN(gguf::File f, gguf::File::parse(bytes, "mixture candidate"));
    RIDGE_ASSIGN_OR_RETURN(model::Model m, model::Model::from_file(std::make_shared<const gguf::File>(std::move(f)), k_));
    RIDGE_ASSIGN_OR_RETURN(KldSummary s, kld_against(m, base_, tokens_, o_, pool_));
    ++n_evaluations;
    return s.kld_mean;
  }

  Result<double> kld_of(const std::vector<offline::TensorTypeOverride>& overrides) {
    RIDGE_ASSIGN_OR_RETURN(offline::QuantizePlan p, plan(overrides));
    return kld(p);
  }

  int64_t n_evaluations = 0;

 private:
  const gguf::File& in_;
  const kernels::Kernels& k_;
  const BaseDistributions& base_;
  std::span<const int32_t> tokens_;
  const PerplexityOptions& o_;
  offline::QuantMix mix_;
  const MixSearchOptions& opt_;
  ThreadPool& pool_;
};

struct Group {
  std::vector<std::string> tensors;
  std::vector<double> added;     // per ladder type: KLD added over the top's
  std::vector<uint64_t> bytes;   // per ladder type: the group's bytes
  size_t at = 0;                 // the chosen ladder index
};

}  // namespace

Result<MixSearchResult> search_mixture(const gguf::File& in, const kernels::Kernels& k, const BaseDistributions& base,
                                       std::span<const int32_t> tokens, const PerplexityOptions& o,
                                       offline::QuantMix mix, const MixSearchOptions& opt, ThreadPool& pool,
                                       const std::function<void(const std::string&)>& log) {
  if (opt.ladder.size() < 2) return usage_error("--target-kld needs at least two types to choose from");
  if (!(opt.target_kld > 0)) return usage_error("--target-kld must be positive, got {}", opt.target_kld);
  Evaluator ev(in, k, base, tokens, o, mix, opt, pool);
  const size_t top = opt.ladder.size() - 1;
  // The quantizable tensors (the mixture converts them) and their groups.
  RIDGE_ASSIGN_OR_RETURN(offline::QuantizePlan probe, ev.plan({}));
  std::vector<std::string> names;
  int64_t n_layer = 0;
  for (const offline::TensorPlan& t : probe.tensors) {
    if (!t.choice.convert || !kernels::can_quantize(t.choice.type)) continue;
    names.push_back(t.name);
    n_layer = std::max(n_layer, layer_of(t.name) + 1);
  }
  if (names.empty()) return usage_error("--target-kld: the model has no tensor to quantize");
  std::map<std::string, size_t> by_key;
  std::vector<Group> groups;
  for (const std::string& n : names) {
    std::string key = n;
    if (static_cast<int64_t>(names.size()) > opt.max_groups && layer_of(n) >= 0) {
      key = fmt::format("{}@{}", kind_of(n), layer_of(n) * 4 / std::max<int64_t>(n_layer, 1));
    }
    auto [it, fresh] = by_key.emplace(key, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].tensors.push_back(n);
  }
  // The overrides for a ladder index per group.
  const auto overrides_of = [&](const std::vector<size_t>& at) {
    std::vector<offline::TensorTypeOverride> out;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (const std::string& n : groups[g].tensors) out.push_back({exact(n), opt.ladder[at[g]]});
    }
    return out;
  };
  const auto bytes_of = [&](const offline::QuantizePlan& p, const Group& g) {
    uint64_t b = 0;
    for (const offline::TensorPlan& t : p.tensors) {
      if (std::find(g.tensors.begin(), g.tensors.end(), t.name) != g.tensors.end()) b += t.bytes_out;
    }
    return b;
  };
  std::vector<size_t> at(groups.size(), top);
  MixSearchResult r;
  r.n_groups = static_cast<int64_t>(groups.size());
  RIDGE_ASSIGN_OR_RETURN(r.kld_top, ev.kld_of(overrides_of(at)));
  if (log) log(fmt::format("{} groups of {} tensors; every one at {}: KLD {:.6f}", groups.size(), names.size(),
                           ggml_type_name(opt.ladder[top]), r.kld_top));
  if (r.kld_top > opt.target_kld) {
    return usage_error("--target-kld {}: every tensor at {} already gives {:.6f}", opt.target_kld,
                       ggml_type_name(opt.ladder[top]), r.kld_top);
  }
  // Sensitivities: each group alone at each lower type (a type that falls back to one already
  // measured for the group reuses its figure).
  for (size_t g = 0; g < groups.size(); ++g) {
    Group& grp = groups[g];
    grp.added.assign(opt.ladder.size(), 0.0);
    grp.bytes.assign(opt.ladder.size(), 0);
    std::map<std::vector<GgmlType>, double> seen;
    for (size_t t = 0; t <= top; ++t) {
      std::vector<size_t> one(groups.size(), top);
      one[g] = t;
      RIDGE_ASSIGN_OR_RETURN(offline::QuantizePlan p, ev.plan(overrides_of(one)));
      grp.bytes[t] = bytes_of(p, grp);
      std::vector<GgmlType> actual;
      for (const offline::TensorPlan& tp : p.tensors) {
        if (std::find(grp.tensors.begin(), grp.tensors.end(), tp.name) != grp.tensors.end()) actual.push_back(tp.choice.type);
      }
      if (t == top) break;
      if (auto it = seen.find(actual); it != seen.end()) {
        grp.added[t] = it->second;
        continue;
      }
      RIDGE_ASSIGN_OR_RETURN(double kl, ev.kld(p));
      grp.added[t] = std::max(0.0, kl - r.kld_top);
      seen.emplace(actual, grp.added[t]);
    }
  }
  // Greedy from the cheapest: upgrade the group whose next better type saves the most predicted
  // KLD per byte, until the prediction meets the budget.
  std::fill(at.begin(), at.end(), 0);
  const auto predicted = [&] {
    double p = r.kld_top;
    for (size_t g = 0; g < groups.size(); ++g) p += groups[g].added[at[g]];
    return p;
  };
  const auto upgrade = [&]() -> bool {
    double best = -1;
    size_t best_g = 0, best_t = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t t = at[g] + 1; t <= top; ++t) {
        const double saved = groups[g].added[at[g]] - groups[g].added[t];
        const double cost = static_cast<double>(groups[g].bytes[t]) - static_cast<double>(groups[g].bytes[at[g]]);
        const double gain = cost > 0 ? saved / cost : (saved > 0 ? 1e30 : 0);
        if (gain > best) {
          best = gain;
          best_g = g;
          best_t = t;
        }
      }
    }
    if (best < 0) return false;
    at[best_g] = best_t;
    return true;
  };
  while (predicted() > opt.target_kld && upgrade()) {
  }
  r.kld_predicted = predicted();
  RIDGE_ASSIGN_OR_RETURN(r.kld_measured, ev.kld_of(overrides_of(at)));
  if (log) log(fmt::format("chosen: predicted KLD {:.6f}, measured {:.6f}", r.kld_predicted, r.kld_measured));
  // The additions were measured one group at a time: where together they add more, keep
  // upgrading (measured each time).
  for (int extra = 0; r.kld_measured > opt.target_kld && extra < 16 && upgrade(); ++extra) {
    RIDGE_ASSIGN_OR_RETURN(r.kld_measured, ev.kld_of(overrides_of(at)));
    if (log) log(fmt::format("over the budget: one more upgrade, measured {:.6f}", r.kld_measured));
  }
  if (r.kld_measured > opt.target_kld) {
    std::fill(at.begin(), at.end(), top);
    r.kld_measured = r.kld_top;
  }
  r.overrides = overrides_of(at);
  RIDGE_ASSIGN_OR_RETURN(r.plan, ev.plan(r.overrides));
  RIDGE_ASSIGN_OR_RETURN(r.kld_named, ev.kld(probe));
  r.bpw_named = probe.bits_per_weight_out();
  r.n_evaluations = ev.n_evaluations;
  return r;
}

}  // namespace ridge::quality
