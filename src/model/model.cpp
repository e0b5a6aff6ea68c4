#include "model/model.h"

#include <algorithm>
#include <filesystem>

#include "checkpoint/hf_folder.h"
#include "gguf/reader.h"
#include "model/ops.h"

namespace ridge::model {

Result<Model> Model::load(const std::string& path, const kernels::Kernels& kernels,
                          gguf::Backing backing) {
  // A Hugging Face checkpoint folder: converted in memory of its own (checkpoint/hf_folder.h).
  RIDGE_ASSIGN_OR_RETURN(gguf::File file, std::filesystem::is_directory(path)
                                              ? checkpoint::load_checkpoint(path)
                                              : gguf::File::open(path, {}, backing));
  // The copy is this model's alone: its matrices may be rewritten into the kernels' layout.
  const std::span<uint8_t> writable = file.writable_bytes();
  return bind(std::make_shared<const gguf::File>(std::move(file)), kernels, writable);
}

Result<Model> Model::from_file(std::shared_ptr<const gguf::File> file,
                               const kernels::Kernels& kernels) {
  return bind(std::move(file), kernels, {});
}

Result<Model> Model::bind(std::shared_ptr<const gguf::File> file, const kernels::Kernels& kernels,
                          std::span<uint8_t> writable) {
  Model m;
  m.file_ = std::move(file);
  m.kernels_ = &kernels;
  const std::string& path = m.file_->path();
  RIDGE_ASSIGN_OR_RETURN(m.cfg_, config_from_gguf(*m.file_));
  RIDGE_ASSIGN_OR_RETURN(m.arch_, find_architecture(m.cfg_.arch));
  WeightBinder binder(*m.file_, kernels, m.w_, writable);
  RIDGE_RETURN_IF_ERROR(bind_common(binder, m.cfg_, m.w_).with_prefix(path));
  RIDGE_RETURN_IF_ERROR(m.arch_->bind_extra(binder, m.cfg_, m.w_).with_prefix(path));
  m.rope_factors_.resize(static_cast<size_t>(m.cfg_.rope_dims / 2));
  rope_freq_factors(m.cfg_, m.w_.rope_freqs ? m.w_.rope_freqs.data : nullptr,
                    m.rope_factors_.data());
  // The sliding-window layers' table shares the factors, except where rope_freqs are the global
  // layers' alone (gemma4: its windows rotate unscaled).
  if (m.cfg_.rope_freqs_global_only) {
    m.rope_factors_swa_.assign(static_cast<size_t>(m.cfg_.swa_rope_dims() / 2), 1.0f);
  } else {
    m.rope_factors_swa_ = m.rope_factors_;
  }
  m.yarn_ = yarn_params(m.cfg_);
  // The rotary tables' divisors are device data too (the embed op reads them).
  m.w_.regions.push_back({"rope factors", m.rope_factors_.data(), m.rope_factors_.size() * sizeof(float), true});
  if (!m.rope_factors_swa_.empty()) {
    m.w_.regions.push_back({"rope factors (sliding-window layers)", m.rope_factors_swa_.data(),
                            m.rope_factors_swa_.size() * sizeof(float), true});
  }
  return m;
}

bool Model::cache_has_mtp(const kv::KvCache& kv) const {
  return has_mtp() && kv.config().n_layer == cfg_.n_kv_layers() + 1;
}

bool Model::has_window_space() const {
  bool window = false, global = false;
  for (int64_t il = 0; il < cfg_.n_layer; ++il) {
    if (!cfg_.has_own_kv(il)) continue;
    (cfg_.is_swa_layer(il) ? window : global) = true;
  }
  return window && global;
}

kv::KvCacheConfig Model::kv_config(int64_t n_blocks, kv::KvType type, int64_t block_size,
                                   int64_t n_seqs, int64_t n_blocks_window, bool mtp) const {
  kv::KvCacheConfig c;
  c.n_layer = cfg_.n_kv_layers();
  c.n_head_kv = cfg_.n_head_kv;
  c.head_dim = cfg_.head_dim;
  for (int64_t il = 0; il < cfg_.n_layer; ++il) {
    if (cfg_.has_own_kv(il)) c.layer_shapes.push_back({cfg_.layer_n_head_kv(il), cfg_.layer_head_dim(il)});
  }
  if (mtp && has_mtp()) {
    c.layer_shapes.push_back({cfg_.layer_n_head_kv(cfg_.n_layer), cfg_.layer_head_dim(cfg_.n_layer)});
    c.n_layer += 1;
  }
  const kv::KvLayerShape uniform{c.n_head_kv, c.head_dim};
  if (std::all_of(c.layer_shapes.begin(), c.layer_shapes.end(),
                  [&](const kv::KvLayerShape& l) { return l == uniform; })) {
    c.layer_shapes.clear();
  }
  c.block_size = block_size;
  c.n_blocks = n_blocks;
  c.type = type;
  if (n_blocks_window > 0 && has_window_space()) {
    c.n_blocks_window = n_blocks_window;
    for (int64_t il = 0; il < cfg_.n_layer; ++il) {
      if (cfg_.has_own_kv(il)) c.window_layers.push_back(cfg_.is_swa_layer(il) ? 1 : 0);
    }
    if (mtp && has_mtp()) c.window_layers.push_back(0);
  }
  if (cfg_.n_recurrent_layers() > 0) {
    c.state.n_layer = cfg_.n_recurrent_layers();
    c.state.floats_per_layer = cfg_.ssm_state_floats();
    c.state.n_slots = n_seqs;
  }
  return c;
}

}  // namespace ridge::model
