// The grid and ternary formats, once: X(ggml type suffix, format struct of grid_formats.h, rows
// routine name). Expanded where each format needs an entry (the type dispatch, the ISAs' rows
// routines and their registration).
#pragma once

#define RIDGE_GRID_FORMATS(X) \
  X(TQ1_0, Tq1_0, tq1_0)       \
  X(TQ2_0, Tq2_0, tq2_0)       \
  X(IQ2_XXS, Iq2Xxs, iq2_xxs)  \
  X(IQ2_XS, Iq2Xs, iq2_xs)     \
  X(IQ2_S, Iq2S, iq2_s)        \
  X(IQ3_XXS, Iq3Xxs, iq3_xxs)  \
  X(IQ3_S, Iq3S, iq3_s)        \
  X(IQ1_S, Iq1S, iq1_s)        \
  X(IQ1_M, Iq1M, iq1_m)
