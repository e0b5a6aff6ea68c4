// What one step costs (model/cost.h): the bytes and FLOPs of a mix of decode tokens and prompt
// chunks, on the model's per-token and per-position figures (model_cost).
#include <algorithm>
#include <cmath>
#include <span>

#include "model/cost.h"

namespace ridge::model {

namespace {

// The step's matmul, attention and KV figures; weight_bytes left 0. Returns the new tokens.
double step_without_weights(const ModelCost& m, std::span<const SeqWork> seqs, StepCost& c) {
  double n_tokens = 0;
  for (const auto& s : seqs) {
    if (s.n_new <= 0) continue;
    const double n_new = static_cast<double>(s.n_new);
    const double past = static_cast<double>(s.n_past);
    n_tokens += n_new;
    c.kv_read_bytes += m.kv_read_bytes(past, n_new);  // the sequence's KV, read once
    c.kv_write_bytes += n_new * m.kv_bytes_per_token;
    c.state_bytes += 2.0 * m.state_bytes_per_seq;  // read once, written once
    c.attention_flops += m.attention_flops(past, n_new);
    c.flops += n_new * m.layer_flops_per_token + m.head_flops_per_row;
    c.activation_bytes += n_new * m.activation_bytes_per_token + m.head_activation_bytes;
  }
  c.flops += c.attention_flops;
  return n_tokens;
}

}  // namespace

StepCost cost_of_step(const ModelCost& m, std::span<const SeqWork> seqs) {
  StepCost c;
  const double n_tokens = step_without_weights(m, seqs, c);
  if (n_tokens > 0) {
    const double experts = expected_distinct_experts(m.config.n_expert, m.config.n_expert_used, n_tokens);
    c.weight_bytes = m.weight_bytes_for_experts(experts) + n_tokens * m.embd_row_bytes;
  }
  return c;
}

StepCost cost_of_step(const ModelCost& m, std::span<const SeqWork> seqs, std::span<const int64_t> experts_read) {
  if (experts_read.empty() || !m.is_moe()) return cost_of_step(m, seqs);
  StepCost c;
  const double n_tokens = step_without_weights(m, seqs, c);
  if (n_tokens > 0) {
    c.weight_bytes = m.dense_read_bytes + n_tokens * m.embd_row_bytes;
    RIDGE_CHECK(experts_read.size() == 1 || experts_read.size() == m.expert_bytes.size());
    for (size_t l = 0; l < m.expert_bytes.size(); ++l) {
      const int64_t n = experts_read[experts_read.size() == 1 ? 0 : l];
      c.weight_bytes += static_cast<double>(std::clamp<int64_t>(n, 0, m.config.n_expert)) * m.expert_bytes[l];
    }
  }
  return c;
}

double roof_time(const StepCost& c, double bandwidth_bytes_per_s, double peak_flops) {
  if (bandwidth_bytes_per_s <= 0) return c.bytes();
  const double t_bytes = c.bytes() / bandwidth_bytes_per_s;
  return peak_flops > 0 ? std::max(t_bytes, c.flops / peak_flops) : t_bytes;
}

StepCost cost_of_step(const ModelCost& m, int64_t batch, int64_t context) {
  if (batch <= 0) return {};
  SeqWork one{context > 0 ? context - 1 : 0, 1};
  StepCost s = cost_of_step(m, std::span<const SeqWork>(&one, 1));
  const double b = static_cast<double>(batch);
  // Every sequence adds its own KV, activations and FLOPs; the weights are shared (an MoE reads
  // the experts its batch's tokens reach).
  s.weight_bytes = m.weight_bytes_for_experts(expected_distinct_experts(m.config.n_expert, m.config.n_expert_used, b)) +
                   b * m.embd_row_bytes;
  s.kv_read_bytes *= b;
  s.kv_write_bytes *= b;
  s.activation_bytes *= b;
  s.state_bytes *= b;
  s.flops *= b;
  s.attention_flops *= b;
  return s;
}

StepCost cost_of_prefill(const ModelCost& m, int64_t n_tokens) {
  SeqWork s{0, n_tokens};
  return cost_of_step(m, std::span<const SeqWork>(&s, 1));
}

namespace {

// `s` (an MoE step of n_tokens new tokens) with every expert applied to every token and read.
StepCost as_dense(const ModelCost& m, StepCost s, double n_tokens) {
  if (!m.is_moe() || n_tokens <= 0) return s;
  const auto& c = m.config;
  const double idle = static_cast<double>(c.n_expert - c.n_expert_used);
  const double read = expected_distinct_experts(c.n_expert, c.n_expert_used, n_tokens);
  s.weight_bytes += (static_cast<double>(c.n_expert) - read) * m.expert_bytes_all_layers;
  s.flops += n_tokens * idle * 2.0 * m.expert_params;
  return s;
}

}  // namespace

StepCost dense_equivalent_step(const ModelCost& m, std::span<const SeqWork> seqs) {
  double n_tokens = 0;
  for (const auto& s : seqs) n_tokens += static_cast<double>(std::max<int64_t>(s.n_new, 0));
  return as_dense(m, cost_of_step(m, seqs), n_tokens);
}

StepCost dense_equivalent_step(const ModelCost& m, int64_t batch, int64_t context) {
  return as_dense(m, cost_of_step(m, batch, context), static_cast<double>(std::max<int64_t>(batch, 0)));
}

}  // namespace ridge::model
