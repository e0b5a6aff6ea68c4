#include "quality/imatrix_backend.h"

#include <cmath>

#include "gguf/reader.h"

namespace ridge::quality {

WeightNames::WeightNames(const model::Model& m, bool process_output) {
  for (const gguf::TensorInfo& t : m.file().tensors()) {
    if (t.name.rfind("blk.", 0) == 0 || (process_output && t.name == "output.weight")) {
      names_.emplace(t.data, t.name);
    }
  }
}

const std::string* WeightNames::find(const void* data) const {
  const auto it = names_.find(data);
  return it == names_.end() ? nullptr : &it->second;
}

void RecordingBackend::record_rows(const void* data, int64_t cols, const float* x, int64_t ldx, int64_t m,
                                   int64_t mat, int64_t n_mat) {
  const std::string* name = names_->find(data);
  if (name == nullptr || m <= 0) return;
  ImatrixEntry& e = out_->entries[*name];
  if (e.in_sum2.empty()) {
    e.n_cols = cols;
    e.in_sum2.assign(static_cast<size_t>(cols * n_mat), 0.0f);
    e.counts.assign(static_cast<size_t>(n_mat), 0);
  }
  RIDGE_CHECK(e.n_cols == cols && static_cast<int64_t>(e.counts.size()) == n_mat && mat < n_mat);
  float* acc = e.in_sum2.data() + mat * cols;
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x + r * ldx;
    for (int64_t j = 0; j < cols; ++j) acc[j] += row[j] * row[j];
  }
  e.counts[static_cast<size_t>(mat)] += m;
}

void RecordingBackend::record(const kernels::WeightView& w, const float* x, int64_t ldx, int64_t m) {
  if (m >= kMinRows) record_rows(w.data, w.cols, x, ldx, m, 0, 1);
}

const float* RecordingBackend::down_input(const model::GatedFfn& w, const float* x, int64_t ldx, int64_t m) {
  const int64_t ff = w.gate->rows;
  gate_.resize(static_cast<size_t>(m * ff));
  up_.resize(static_cast<size_t>(m * ff));
  const kernels::MatmulTarget gate_up[] = {{w.gate, gate_.data(), ff}, {w.up, up_.data(), ff}};
  inner_->matmul_group(std::span(gate_up), x, ldx, m);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < ff; ++j) {
      float& g = gate_[static_cast<size_t>(r * ff + j)];
      float u = up_[static_cast<size_t>(r * ff + j)];
      if (w.gate_bias != nullptr) g += w.gate_bias[j];
      if (w.up_bias != nullptr) u += w.up_bias[j];
      switch (w.act) {
        case model::FfnActivation::kSwiglu: g = g / (1.0f + std::exp(-g)) * u; break;
        case model::FfnActivation::kGeglu: g = model::geglu(g, u); break;
        case model::FfnActivation::kSwigluOai: g = model::swiglu_oai(g, u); break;
      }
    }
  }
  return gate_.data();
}

void RecordingBackend::matmul(const kernels::WeightView& w, const float* x, int64_t ldx, int64_t m,
                              float* y, int64_t ldy) {
  record(w, x, ldx, m);
  inner_->matmul(w, x, ldx, m, y, ldy);
}

void RecordingBackend::matmul_group(std::span<const kernels::MatmulTarget> targets, const float* x,
                                    int64_t ldx, int64_t m) {
  for (const kernels::MatmulTarget& t : targets) record(*t.w, x, ldx, m);
  inner_->matmul_group(targets, x, ldx, m);
}

void RecordingBackend::gated_ffn(const model::GatedFfn& w, const float* x, int64_t ldx, int64_t m,
                                 float* gate_buf, float* up_buf, float* out, int64_t ldo) {
  record(*w.gate, x, ldx, m);
  record(*w.up, x, ldx, m);
  if (m >= kMinRows && names_->find(w.down->data) != nullptr) {
    record(*w.down, down_input(w, x, ldx, m), w.gate->rows, m);  // recomputed: the op keeps it inside
  }
  inner_->gated_ffn(w, x, ldx, m, gate_buf, up_buf, out, ldo);
}

void RecordingBackend::gated_delta_net(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t il,
                                       kv::RecurrentState& states, model::Workspace& ws) {
  for (const kernels::WeightView* w : {&l.ssm_qkv, &l.ssm_z, &l.ssm_beta, &l.ssm_alpha}) {
    record(*w, ws.xn.data(), cfg.n_embd, n_rows_);
  }
  inner_->gated_delta_net(cfg, l, il, states, ws);
}

}  // namespace ridge::quality
