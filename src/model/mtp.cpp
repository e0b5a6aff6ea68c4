// Qwen3.5's MTP head (multi-token prediction, the GGUF's nextn block; docs/speculative.md): one
// full-attention block that, given a token x_p and the hidden state h of the position before
// it, predicts the token after x_p's successor. Its KV layer sits after the trunk's in the same
// cache, at the same slots: position p holds the pair (h_{p-1}, x_p). Every trunk step writes it
// for its rows (mtp_kv), so a draft at the newest position attends to the whole text; a draft
// step (forward_mtp) runs the whole block and the head.
#include <cmath>

#include "model/backend.h"
#include "model/model.h"

namespace ridge::model {

void Model::mtp_input(int64_t n, const float* h, bool rope_made, Workspace& ws, Backend& backend) const {
  const int64_t d = cfg_.n_embd;
  const MtpWeights& m = w_.mtp;
  EmbedOp op = embed_op(m.embed, ws);  // x: the rows' token embeddings, and their rotary tables
  if (rope_made) op.cos = nullptr;
  backend.embed(op);
  backend.rms_norm(ws.x.data(), m.enorm.data, ws.xn.data(), n, d, cfg_.rms_eps);
  backend.copy_rows(ws.xn.data(), d, ws.mtp_cat.data(), 2 * d, n, d);
  backend.rms_norm(h, m.hnorm.data, ws.xn.data(), n, d, cfg_.rms_eps);
  backend.copy_rows(ws.xn.data(), d, ws.mtp_cat.data() + d, 2 * d, n, d);
  backend.matmul(m.eh_proj, ws.mtp_cat.data(), 2 * d, n, ws.x.data(), d);  // [n, n_embd]
}

void Model::mtp_kv(const Batch& batch, kv::KvCache& kv, Workspace& ws, Backend& backend) const {
  const int64_t n = batch.n_tokens();
  backend.previous_rows(ws.mtp_hidden.data(), batch.mtp_h.empty() ? nullptr : batch.mtp_h.data(),
                        ws.mtp_h_in.data(), cfg_.n_embd);
  mtp_input(n, ws.mtp_h_in.data(), /*rope_made=*/true, ws, backend);  // the trunk's tables
  attention_block(cfg_.n_layer, n, kv, ws, backend, /*attend=*/false);
}

Result<std::span<const float>> Model::forward_mtp(const Batch& batch, std::span<const float> h,
                                                  kv::KvCache& kv, Workspace& ws,
                                                  Backend& backend) const {
  const int64_t n = batch.n_tokens(), d = cfg_.n_embd;
  if (!cache_has_mtp(kv)) return error("forward_mtp: the cache holds no MTP layer (or the model has no MTP head)");
  if (!ws.limits().mtp) return error("forward_mtp: the workspace has no MTP buffers");
  if (static_cast<int64_t>(h.size()) != n * d) {
    return error("forward_mtp: {} hidden values for {} rows of {}", h.size(), n, d);
  }
  if (batch.n_outputs() != n) return error("forward_mtp: every row of an MTP step returns logits");
  RIDGE_RETURN_IF_ERROR(check_limits(batch, kv, ws, backend));
  if (n == 0) return std::span<const float>();
  const int64_t il = cfg_.n_layer;
  const float* h_rows = h.data();
  if (DeviceMemory& mem = backend.memory(); !mem.host_visible()) {  // h is the host's
    mem.to_device(ws.mtp_h_in.data(), h.data(), h.size_bytes());
    h_rows = ws.mtp_h_in.data();
  }
  backend.begin_step(batch);
  mtp_input(n, h_rows, /*rope_made=*/false, ws, backend);
  attention_block(il, n, kv, ws, backend);
  ffn_block(il, n, ws, backend);
  backend.rms_norm(ws.x.data(), w_.mtp.head_norm.data, ws.mtp_hidden.data(), n, d, cfg_.rms_eps);
  const kernels::WeightView& head = w_.mtp.head;
  backend.matmul(head, ws.mtp_hidden.data(), head.cols, n, ws.logits.data(), head.rows);
  backend.end_step();
  return to_host(std::span<const float>(ws.logits.data(), static_cast<size_t>(n * cfg_.n_vocab)), ws,
                 backend);
}

}  // namespace ridge::model
