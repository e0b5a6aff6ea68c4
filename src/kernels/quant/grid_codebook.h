// The grid formats' codebooks seen from the quantizer's side (internal to kernels/quant): each
// entry of a grid (kernels/quant/iq_grids.h) as level indices, and for every point of the level
// lattice the entries nearest to it, so that the best entry for a group of elements is found by
// rounding each element to its nearest level and weighing a short list of candidates, instead of
// the whole grid.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/ggml_type.h"

namespace ridge::kernels {

class GridCodebook {
 public:
  // The codebook of a grid format's type (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S; IQ1_M
  // shares IQ1_S's grid). Built once, on first use; CHECKs the type.
  static const GridCodebook& of(GgmlType type);

  int group() const { return group_; }           // elements per entry: 8, or 4 for IQ3
  int entries() const { return n_entries_; }
  float level(int i) const { return levels_[i]; }  // ascending, in the format's q units
  int levels() const { return n_levels_; }
  // Level index of element e of entry k.
  uint8_t entry_level(int k, int e) const { return entry_levels_[k * group_ + e]; }

  // The entry minimizing sum_e w_e (y_e - s (L_e + delta))^2 over the group's elements, with
  // s > 0, L_e the entry's level values and delta a shift in q units (IQ1's +-1; 0 for the rest);
  // w null weighs all elements 1. Searches the entries nearest to the rounded point. Returns the
  // entry; *err gets its error.
  int best(const float* y, const float* w, float s, float delta, double* err) const;

 private:
  GridCodebook(GgmlType type);
  int nearest_level(float u) const;

  int group_ = 0, n_entries_ = 0, n_levels_ = 0;
  float levels_[8] = {};
  std::vector<uint8_t> entry_levels_;
  // Candidates of lattice point p: cand_[cand_begin_[p] .. cand_begin_[p + 1]).
  std::vector<uint32_t> cand_begin_;
  std::vector<uint16_t> cand_;
};

}  // namespace ridge::kernels
