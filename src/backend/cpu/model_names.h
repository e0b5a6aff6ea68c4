// The model's types and exact definitions (model/) that the CPU backend's implementation files
// use by their plain names.
#pragma once

#include "model/batch.h"
#include "model/config.h"
#include "model/ffn.h"
#include "model/ops.h"
#include "model/weights.h"
#include "model/workspace.h"

namespace ridge::backend::cpu {

using model::Batch;
using model::FfnActivation;
using model::GatedFfn;
using model::LayerWeights;
using model::LinearWorkspace;
using model::MoeWorkspace;
using model::ModelConfig;
using model::RowSnapshot;
using model::SeqRows;
using model::Workspace;

using model::add_inplace;
using model::dot_f32;
using model::geglu;
using model::rms_norm;
using model::rope;
using model::softmax;
using model::softmax_with_sink;

}  // namespace ridge::backend::cpu
