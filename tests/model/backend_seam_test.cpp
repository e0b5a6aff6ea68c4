// The backend seam (model/backend.h): a backend defined and registered here, outside model/ and
// engine/, runs the forward of every kind of layer through the interface alone. It hands each op
// to the CPU backend and records the op: the logits must be the CPU backend's bits, every op must
// come between begin_step and end_step, and each layer must ask for the ops its architecture
// needs.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/registry.h"
#include "engine/session.h"
#include "test_util.h"

namespace ridge::model {
namespace {

class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  std::vector<std::string> ops;  // every call, in order
  int outside_step = 0;          // ops called outside begin_step .. end_step

  std::string_view name() const override { return "recording"; }
  int n_threads() const override { return inner_->n_threads(); }
  DeviceMemory& memory() override { return inner_->memory(); }
  Status load_weights(const model::Weights& weights) override { return inner_->load_weights(weights); }
  void begin_step(const Batch& batch) override {
    in_step_ = true;
    ops.emplace_back("begin_step");
    inner_->begin_step(batch);
  }
  void end_step() override {
    note("end_step");
    in_step_ = false;
    inner_->end_step();
  }
  void embed(const EmbedOp& op) override {
    note("embed");
    inner_->embed(op);
  }
  void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t d,
                float eps) override {
    note("rms_norm");
    inner_->rms_norm(x, w, y, rows, d, eps);
  }
  void matmul(const kernels::WeightView& w, const float* x, int64_t ldx, int64_t m, float* y,
              int64_t ldy) override {
    note("matmul");
    inner_->matmul(w, x, ldx, m, y, ldy);
  }
  void matmul_group(std::span<const kernels::MatmulTarget> targets, const float* x, int64_t ldx,
                    int64_t m) override {
    note("matmul_group");
    inner_->matmul_group(targets, x, ldx, m);
  }
  void attention_input(const AttentionInputOp& op) override {
    note("attention_input");
    inner_->attention_input(op);
  }
  void attention(const AttentionOp& a, const float* q_gate) override {
    note(q_gate != nullptr ? "gated_attention" : "attention");
    inner_->attention(a, q_gate);
  }
  void residual(const ResidualOp& op) override {
    note("residual");
    inner_->residual(op);
  }
  void gated_ffn(const GatedFfn& w, const float* x, int64_t ldx, int64_t m, float* gate_buf,
                 float* up_buf, float* out, int64_t ldo) override {
    note(w.act == FfnActivation::kGeglu ? "geglu_ffn" : "gated_ffn");
    inner_->gated_ffn(w, x, ldx, m, gate_buf, up_buf, out, ldo);
  }
  void moe_ffn(const ModelConfig& cfg, const LayerWeights& l, int64_t il, int64_t m,
               Workspace& ws, float* out) override {
    note("moe_ffn");
    inner_->moe_ffn(cfg, l, il, m, ws, out);
  }
  void begin_recurrent(kv::RecurrentState& states, Workspace& ws) override {
    note("begin_recurrent");
    inner_->begin_recurrent(states, ws);
  }
  void gated_delta_net(const ModelConfig& cfg, const LayerWeights& l, int64_t il,
                       kv::RecurrentState& states, Workspace& ws) override {
    note("gated_delta_net");
    inner_->gated_delta_net(cfg, l, il, states, ws);
  }
  void end_recurrent(kv::RecurrentState& states) override {
    note("end_recurrent");
    inner_->end_recurrent(states);
  }
  void copy_rows(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows, int64_t width) override {
    note("copy_rows");
    inner_->copy_rows(src, lds, dst, ldd, rows, width);
  }
  void previous_rows(const float* rows, const float* prev, float* out, int64_t d) override {
    note("previous_rows");
    inner_->previous_rows(rows, prev, out, d);
  }
  void keep_output_rows(std::span<const RowBuffer> buffers) override {
    note("keep_output_rows");
    inner_->keep_output_rows(buffers);
  }
  void softcap(float* z, int64_t rows, int64_t n, float cap) override {
    note("softcap");
    inner_->softcap(z, rows, n, cap);
  }
  void scale(float* x, int64_t rows, int64_t n, float s) override {
    note("scale");
    inner_->scale(x, rows, n, s);
  }
  void geglu(const float* gate, const float* up, float* out, int64_t rows, int64_t n) override {
    note("geglu");
    inner_->geglu(gate, up, out, rows, n);
  }
  void per_layer_inputs(const PerLayerInputOp& op) override {
    note("per_layer_inputs");
    inner_->per_layer_inputs(op);
  }

 private:
  void note(const char* op) {
    if (!in_step_) ++outside_step;
    ops.emplace_back(op);
  }
  std::unique_ptr<Backend> inner_;
  bool in_step_ = false;
};

RecordingBackend* g_last_recorder = nullptr;  // the backend the last session made

const bool kRecorderRegistered = backend::register_backend(
    "test-recording", [](const backend::BackendParams& p) -> Result<std::unique_ptr<Backend>> {
      RIDGE_ASSIGN_OR_RETURN(std::unique_ptr<Backend> cpu, backend::create_backend("cpu", p));
      auto recorder = std::make_unique<RecordingBackend>(std::move(cpu));
      g_last_recorder = recorder.get();
      return std::unique_ptr<Backend>(std::move(recorder));
    });

// The preset's f32 model (seed 9).
const Model& tiny(const std::string& preset) { return testing::cached_tiny(preset, 9); }

struct PromptRun {
  std::vector<float> logits;     // every row's
  std::vector<std::string> ops;  // the recording backend's: what the forward asked for
  int outside_step = 0;
};

// A 10-token prompt (every row's logits) on the backend named `backend`, 2 threads.
PromptRun prompt_logits(const Model& m, const std::string& backend) {
  engine::SessionOptions o;
  o.n_ctx = 32;
  o.max_outputs = 10;
  o.n_threads = 2;
  o.backend = backend;
  g_last_recorder = nullptr;
  auto s = engine::Session::create(m, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return {};
  std::vector<int32_t> tokens;
  for (int i = 0; i < 10; ++i) tokens.push_back((i * 41 + 7) % 512);
  auto r = s->eval(tokens, /*all_logits=*/true);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  PromptRun run;
  run.logits.assign(r->begin(), r->end());
  if (g_last_recorder != nullptr) {
    run.ops = g_last_recorder->ops;
    run.outside_step = g_last_recorder->outside_step;
  }
  return run;
}

// The ops one layer asks for, from its attention norm to its last residual.
std::vector<std::string> layer_ops(const std::string& mixer, const std::string& ffn, bool last,
                                   bool per_layer_embd, bool out_scale) {
  std::vector<std::string> ops{"rms_norm"};
  if (mixer == "gated_delta_net") {
    ops.push_back(mixer);
  } else {
    ops.insert(ops.end(), {"matmul_group", "attention_input", mixer});
  }
  if (last) ops.push_back("keep_output_rows");
  ops.insert(ops.end(), {"matmul", "residual", ffn, "residual"});
  if (per_layer_embd) ops.insert(ops.end(), {"matmul", "geglu", "matmul", "residual"});
  if (out_scale) ops.push_back("scale");
  return ops;
}

struct Expect {
  std::string preset;
  std::string ffn;      // gated_ffn, geglu_ffn or moe_ffn
  bool softcap = false;  // final logit soft-capping (the gemma presets write a cap)
};

TEST(BackendSeam, AnotherBackendRunsEveryArchitectureThroughTheInterface) {
  ASSERT_TRUE(kRecorderRegistered);
  for (const Expect& e : {Expect{"tiny-llama", "gated_ffn"}, Expect{"tiny-qwen2", "gated_ffn"},
                          Expect{"tiny-qwen3", "gated_ffn"}, Expect{"tiny-qwen3moe", "moe_ffn"},
                          Expect{"tiny-gpt-oss", "moe_ffn"}, Expect{"tiny-gemma2", "geglu_ffn", true},
                          Expect{"tiny-gemma3", "geglu_ffn", true}, Expect{"tiny-gemma4", "geglu_ffn", true},
                          Expect{"tiny-qwen35", "gated_ffn"},
                          Expect{"tiny-qwen35moe", "moe_ffn"}}) {
    SCOPED_TRACE(e.preset);
    const Model& m = tiny(e.preset);
    const ModelConfig& cfg = m.config();
    const PromptRun want = prompt_logits(m, "cpu");
    const PromptRun got = prompt_logits(m, "test-recording");
    ASSERT_FALSE(want.logits.empty());
    EXPECT_TRUE(got.logits == want.logits)
        << "logits through the recording backend are not the CPU backend's";
    EXPECT_EQ(got.outside_step, 0);

    const bool recurrent = cfg.n_recurrent_layers() > 0;
    std::vector<std::string> expected{"begin_step", "embed"};
    const bool ple = cfg.n_embd_per_layer > 0;
    if (ple) expected.insert(expected.end(), {"matmul", "per_layer_inputs"});
    if (recurrent) expected.emplace_back("begin_recurrent");
    for (int64_t il = 0; il < cfg.n_layer; ++il) {
      const std::string mixer = cfg.is_recurrent_layer(il) ? "gated_delta_net"
                                : cfg.attn_output_gate    ? "gated_attention"
                                                          : "attention";
      const bool out_scale = static_cast<bool>(m.weights().layers[static_cast<size_t>(il)].out_scale);
      const auto ops = layer_ops(mixer, e.ffn, il + 1 == cfg.n_layer, ple, out_scale);
      expected.insert(expected.end(), ops.begin(), ops.end());
    }
    if (recurrent) expected.emplace_back("end_recurrent");
    expected.insert(expected.end(), {"rms_norm", "matmul"});
    if (e.softcap) expected.emplace_back("softcap");
    expected.emplace_back("end_step");
    EXPECT_EQ(got.ops, expected);
  }
}

}  // namespace
}  // namespace ridge::model
