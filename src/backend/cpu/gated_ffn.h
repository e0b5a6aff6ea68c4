// The CPU backend's gated feed-forward block (model/ffn.h): down · act(gate · x, up · x).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "model/ffn.h"

namespace ridge::backend::cpu {

// out[m, n_out] (leading dimension ldo) from x[m, n_in] (leading dimension ldx). gate_buf and
// up_buf hold m * n_ff floats each. Gate and up run in one parallel region over one conversion
// of x, and each thread applies the activation to the columns it just computed, while they are
// in cache. Every row's result depends on that row alone (batch invariance).
void gated_ffn(const kernels::Kernels& k, const model::GatedFfn& w, const float* x, int64_t ldx,
               int64_t m, float* gate_buf, float* up_buf, float* out, int64_t ldo,
               ThreadPool& pool);

}  // namespace ridge::backend::cpu
