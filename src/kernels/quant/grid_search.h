// The search behind the grid formats' quantizers (internal to kernels/quant; ridge's own
// algorithm, docs/quantization.md "Writing the grid formats"). A super-block of 256 elements is
// written as x_e = d * ls_s * unit * (sign_e * L_e + delta), with L_e the level of element e in its
// group's grid entry, ls_s = 2 code_s + 1 the odd scale of its sub-block and delta IQ1's +-1.
// This file finds d, the codes, the entries, the signs and the deltas; the formats pack them.
#pragma once

#include <cstdint>

#include "tensor/ggml_type.h"

namespace ridge::kernels {

enum class GridSigns {
  kFree,  // 8 stored sign bits per 8 elements (IQ2_S, IQ3_S)
  kEven,  // 7 stored bits, the count of negatives even (IQ2_XXS, IQ2_XS, IQ3_XXS)
  kNone,  // the grid's values carry their sign (IQ1)
};
enum class GridDelta {
  kNone,
  kPerScale,  // one +-1 shift per sub-block scale (IQ1_S)
  kPerGroup,  // one per group of 8 (IQ1_M)
};

struct GridSpec {
  GgmlType type;     // whose codebook (kernels/quant/grid_codebook.h)
  GridSigns signs;
  GridDelta delta;
  int scale_elems;   // elements per sub-block scale: 16 or 32
  int max_code;      // code_s in [0, max_code]: 15, or 7 for IQ1
  float unit;        // q unit: 1/8 for IQ2 and IQ1, 1/4 for IQ3_XXS, 1 for IQ3_S
};

struct GridChoice {
  float d = 0.0f;            // the fp16 value the block stores
  uint8_t code[16] = {};     // per sub-block
  uint16_t entry[64] = {};   // per group (8 or 4 elements)
  uint8_t sign[32] = {};     // per 8 elements: bit e set when element e is negative
  int8_t delta[64] = {};     // per group: +1 or -1 (IQ1 only; the same over a sub-block for IQ1_S)
};

// The spec of a codebook format's quantizer (kernels/quant/quantize_grid.cpp); null for others
// (the ternary formats have no codebook).
const GridSpec* grid_spec_of(GgmlType type);

// The choice minimizing sum_e w_e (x_e - x^_e)^2 (w null: all 1) that the search finds for one
// super-block of 256 values. All-zero or non-finite input gives d = 0.
void choose_grid(const GridSpec& spec, const float* x, const float* w, GridChoice& out);

// The value element e of the choice decodes to, d * ls * unit * (sign L + delta) in double: what
// the search minimized (the formats' decoders round it differently in the last bits).
double grid_value(const GridSpec& spec, const GridChoice& c, int e);

}  // namespace ridge::kernels
