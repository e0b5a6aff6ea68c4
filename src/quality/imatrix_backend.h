// A backend that records importance-matrix sums (quality/imatrix.h) on its way to another: each
// matmul of a named weight adds the squares of its input rows, then the inner backend runs it.
// The gated FFN's down input (the activation of gate and up) is computed once more here to be
// recorded; the forward's results are the inner backend's.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "model/backend.h"
#include "quality/imatrix.h"

namespace ridge::quality {

// Weight names by where their data lies in a model's file (a WeightView's data pointer).
class WeightNames {
 public:
  explicit WeightNames(const model::Model& m, bool process_output);
  // The name of the weight at `data`, or null where it is not recorded (not blk.*, or the
  // output head without process_output).
  const std::string* find(const void* data) const;

 private:
  std::unordered_map<const void*, std::string> names_;
};

class RecordingBackend final : public model::Backend {
 public:
  // Minimum input rows of a recorded matmul (llama-imatrix skips smaller batches).
  static constexpr int64_t kMinRows = 16;

  RecordingBackend(model::Backend& inner, const WeightNames& names, Imatrix& out)
      : inner_(&inner), names_(&names), out_(&out) {}

  std::string_view name() const override { return "imatrix"; }
  int n_threads() const override { return inner_->n_threads(); }
  DeviceMemory& memory() override { return inner_->memory(); }
  Status load_weights(const model::Weights& weights) override { return inner_->load_weights(weights); }
  void begin_step(const model::Batch& batch) override {
    n_rows_ = batch.n_tokens();
    inner_->begin_step(batch);
  }
  void end_step() override { inner_->end_step(); }
  void embed(const model::EmbedOp& op) override { inner_->embed(op); }
  void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t d, float eps) override {
    inner_->rms_norm(x, w, y, rows, d, eps);
  }
  void matmul(const kernels::WeightView& w, const float* x, int64_t ldx, int64_t m, float* y,
              int64_t ldy) override;
  void matmul_group(std::span<const kernels::MatmulTarget> targets, const float* x, int64_t ldx,
                    int64_t m) override;
  void attention_input(const model::AttentionInputOp& op) override { inner_->attention_input(op); }
  void attention(const model::AttentionOp& a, const float* q_gate) override { inner_->attention(a, q_gate); }
  void residual(const model::ResidualOp& op) override { inner_->residual(op); }
  void gated_ffn(const model::GatedFfn& w, const float* x, int64_t ldx, int64_t m, float* gate_buf,
                 float* up_buf, float* out, int64_t ldo) override;
  // Records the router's input, each routed (token, slot) row under its expert (every step, as
  // llama-imatrix does for indirect matmuls), the experts' recomputed down inputs, and a shared
  // expert's (imatrix_moe.cpp).
  void moe_ffn(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t il, int64_t m,
               model::Workspace& ws, float* out) override;
  void begin_recurrent(kv::RecurrentState& states, model::Workspace& ws) override { inner_->begin_recurrent(states, ws); }
  // Records the in-projections' input (ws.xn, every row of the step); the output projection is
  // a matmul of its own.
  void gated_delta_net(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t il,
                       kv::RecurrentState& states, model::Workspace& ws) override;
  void end_recurrent(kv::RecurrentState& states) override { inner_->end_recurrent(states); }
  void copy_rows(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows, int64_t width) override {
    inner_->copy_rows(src, lds, dst, ldd, rows, width);
  }
  void previous_rows(const float* rows, const float* prev, float* out, int64_t d) override {
    inner_->previous_rows(rows, prev, out, d);
  }
  void keep_output_rows(std::span<const model::RowBuffer> buffers) override { inner_->keep_output_rows(buffers); }
  void softcap(float* z, int64_t rows, int64_t n, float cap) override { inner_->softcap(z, rows, n, cap); }
  void scale(float* x, int64_t rows, int64_t n, float s) override { inner_->scale(x, rows, n, s); }
  void geglu(const float* gate, const float* up, float* out, int64_t rows, int64_t n) override {
    inner_->geglu(gate, up, out, rows, n);
  }
  void per_layer_inputs(const model::PerLayerInputOp& op) override { inner_->per_layer_inputs(op); }

 private:
  // Adds x's m rows (of w.cols, leading dimension ldx) to w's entry, if w is recorded and m is at
  // least kMinRows.
  void record(const kernels::WeightView& w, const float* x, int64_t ldx, int64_t m);
  // Adds m rows of `cols` to matrix `mat` of n_mat of the weight whose data starts at `data`.
  void record_rows(const void* data, int64_t cols, const float* x, int64_t ldx, int64_t m, int64_t mat,
                   int64_t n_mat);
  // act(gate · x + bias, up · x + bias) of f's m rows ([m, f.gate->rows], valid until the next call).
  const float* down_input(const model::GatedFfn& f, const float* x, int64_t ldx, int64_t m);
  // One expert's rows (gathered into rows_) under their 3-D weights' entries.
  void record_expert(const model::ModelConfig& cfg, const model::LayerWeights& l, int64_t e, int64_t n);

  model::Backend* inner_;
  const WeightNames* names_;
  Imatrix* out_;
  std::vector<float> gate_, up_;  // the gated FFN's recomputed activations
  std::vector<float> rows_;       // one expert's routed rows
  int64_t n_rows_ = 0;            // the step's
};

}  // namespace ridge::quality
