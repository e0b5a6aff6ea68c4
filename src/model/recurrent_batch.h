// What a step of a model with recurrent state (Qwen3.5's Gated DeltaNet layers,
// kv::RecurrentState) must satisfy before any backend runs it.
#pragma once

#include "base/status.h"
#include "kv/recurrent_state.h"
#include "model/batch.h"

namespace ridge::model {

// Whether the batch can step the states: one distinct slot per sequence, each sequence's rows
// together in position order, starting at position 0 or where its slot's state stopped.
Status check_recurrent_batch(const Batch& batch, const kv::RecurrentState& states);

}  // namespace ridge::model
