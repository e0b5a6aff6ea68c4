// Per sub-block: signs first (the elements' own, IQ2_XXS-style parity fixed by flipping the
// element that costs least), then scales s around "the largest element on the top level", each
// group's best entry at s (kernels/quant/grid_codebook.h), the least-squares s for those entries,
// and the entries again at that s; the best fit wins. Per super-block: d puts the largest
// sub-block scale on the top odd code; a few such d are tried, each sub-block's code rounded from
// its scale and its groups chosen again under the scale it decodes to; the smallest error wins.
#include "kernels/quant/grid_search.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "kernels/quant/grid_codebook.h"
#include "tensor/fp16.h"

namespace ridge::kernels {
namespace {

constexpr int kQkK = 256;
// Sub-block scales tried: the largest element at 1/0.75 of the top level down to 1/1.4 of it,
// then the two best fits refined.
constexpr int kScaleCandidates = 9;
constexpr double kScaleStep = 1.08;
constexpr int kRefits = 3;

// One sub-block's groups fitted at one scale.
struct SubFit {
  double s = 0.0;    // the scale (value per q unit)
  double err = INFINITY;
  double lsq = 0.0;  // the least-squares scale for the chosen entries
  uint16_t entry[8] = {};
  int8_t delta[8] = {};
};

struct SubBlock {
  const GridSpec& spec;
  const GridCodebook& book;
  const float* y;  // sign-adjusted values: reconstruction is s * (L + delta) in q units
  const float* w;  // null: all 1
  int groups;

  // The groups' best entries at scale s; delta: the sub-block's shift (0 or +-1), or 2 to pick
  // one per group.
  SubFit fit(double s, int delta) const {
    SubFit f;
    f.s = s;
    if (!(s > 0.0)) return f;
    const int g = book.group();
    double num = 0.0, den = 0.0;
    f.err = 0.0;
    for (int k = 0; k < groups; ++k) {
      const float* yk = y + g * k;
      const float* wk = w != nullptr ? w + g * k : nullptr;
      double err = INFINITY;
      int entry = 0, dk = 0;
      const int tries[2] = {delta == 2 ? 1 : delta, -1};
      for (int i = 0; i < (delta == 2 ? 2 : 1); ++i) {
        const int d = tries[i];
        double e2 = 0.0;
        const int en = book.best(yk, wk, static_cast<float>(s), static_cast<float>(d), &e2);
        if (e2 < err) err = e2, entry = en, dk = d;
      }
      f.entry[k] = static_cast<uint16_t>(entry);
      f.delta[k] = static_cast<int8_t>(dk);
      f.err += err;
      for (int e = 0; e < g; ++e) {
        const double v = book.level(book.entry_level(entry, e)) + dk, we = wk != nullptr ? wk[e] : 1.0;
        num += we * yk[e] * v;
        den += we * v * v;
      }
    }
    f.lsq = den > 0.0 ? num / den : 0.0;
    return f;
  }

  // The best fit over the scale candidates; the two best are refined by least-squares steps.
  SubFit search(int delta) const {
    float m = 0.0f;
    for (int e = 0; e < groups * book.group(); ++e) m = std::max(m, std::abs(y[e]));
    if (!(m > 0.0f) || !std::isfinite(m)) {
      SubFit zero;
      zero.err = 0.0;
      return zero;
    }
    const double top = book.level(book.levels() - 1) + (delta != 0 ? 1.0 : 0.0);
    SubFit first, second;
    double f = 0.75;
    for (int i = 0; i < kScaleCandidates; ++i, f *= kScaleStep) {
      const SubFit c = fit(m / (top * f), delta);
      if (c.err < first.err) {
        second = first, first = c;
      } else if (c.err < second.err) {
        second = c;
      }
    }
    for (SubFit* c : {&first, &second}) {
      for (int r = 0; r < kRefits && c->lsq > 0.0; ++r) {
        const SubFit next = fit(c->lsq, delta);
        if (!(next.err < c->err)) break;
        *c = next;
      }
    }
    return second.err < first.err ? second : first;
  }
};

// The signs of 8 elements as the format can store them, and y = x with those signs taken off.
uint8_t choose_signs(GridSigns rule, const float* x, const float* w, float* y) {
  if (rule == GridSigns::kNone) {
    std::memcpy(y, x, 8 * sizeof(float));
    return 0;
  }
  uint8_t neg = 0;
  for (int e = 0; e < 8; ++e) neg = static_cast<uint8_t>(neg | ((x[e] < 0.0f ? 1 : 0) << e));
  if (rule == GridSigns::kEven && (std::popcount(neg) & 1) != 0) {
    int cheapest = 0;  // flipping costs in proportion to w |x|
    double least = INFINITY;
    for (int e = 0; e < 8; ++e) {
      const double c = (w != nullptr ? w[e] : 1.0) * std::abs(x[e]);
      if (c < least) least = c, cheapest = e;
    }
    neg = static_cast<uint8_t>(neg ^ (1u << cheapest));
  }
  for (int e = 0; e < 8; ++e) y[e] = ((neg >> e) & 1) != 0 ? -x[e] : x[e];
  return neg;
}

double ls_of(int code) { return 2.0 * code + 1.0; }

}  // namespace

void choose_grid(const GridSpec& spec, const float* x, const float* w, GridChoice& out) {
  out = GridChoice{};
  const GridCodebook& book = GridCodebook::of(spec.type);
  float y[kQkK];
  for (int b = 0; b < kQkK / 8; ++b) out.sign[b] = choose_signs(spec.signs, x + 8 * b, w ? w + 8 * b : nullptr, y + 8 * b);

  const int n_sub = kQkK / spec.scale_elems, groups = spec.scale_elems / book.group();
  const int delta = spec.delta == GridDelta::kPerGroup ? 2 : spec.delta == GridDelta::kPerScale ? 1 : 0;
  auto sub = [&](int s) {
    return SubBlock{spec, book, y + spec.scale_elems * s, w ? w + spec.scale_elems * s : nullptr, groups};
  };
  // Each sub-block's own best scale (IQ1_S: its delta's two signs tried).
  double scale[16];
  double smax = 0.0;
  for (int s = 0; s < n_sub; ++s) {
    SubFit f = sub(s).search(delta);
    if (delta == 1) {
      const SubFit g = sub(s).search(-1);
      if (g.err < f.err) f = g;
    }
    scale[s] = f.s;
    smax = std::max(smax, f.s);
  }
  if (!(smax > 0.0) || !std::isfinite(smax)) return;

  const double top = ls_of(spec.max_code) * spec.unit;
  double best_err = INFINITY;
  for (double f : {1.0, 1.04, 1.09, 0.97}) {
    const float d = fp16_to_f32(f32_to_fp16(static_cast<float>(smax / top * f)));
    if (!(d > 0.0f) || !std::isfinite(d)) continue;
    GridChoice c;
    c.d = d;
    std::memcpy(c.sign, out.sign, sizeof c.sign);
    double err = 0.0;
    for (int s = 0; s < n_sub && err < best_err; ++s) {
      const double code = std::round((scale[s] / (d * spec.unit) - 1.0) / 2.0);
      c.code[s] = static_cast<uint8_t>(std::clamp(code, 0.0, static_cast<double>(spec.max_code)));
      const double ss = d * ls_of(c.code[s]) * spec.unit;
      SubFit fit = sub(s).fit(ss, delta);
      if (delta == 1) {
        const SubFit g = sub(s).fit(ss, -1);
        if (g.err < fit.err) fit = g;
      }
      for (int k = 0; k < groups; ++k) {
        c.entry[s * groups + k] = fit.entry[k];
        c.delta[s * groups + k] = fit.delta[k];
      }
      err += fit.err;
    }
    if (err < best_err) best_err = err, out = c;
  }
}

double grid_value(const GridSpec& spec, const GridChoice& c, int e) {
  const GridCodebook& book = GridCodebook::of(spec.type);
  const int g = book.group(), k = e / g;
  const double l = book.level(book.entry_level(c.entry[k], e % g));
  const double sign = ((c.sign[e / 8] >> (e % 8)) & 1) != 0 ? -1.0 : 1.0;
  return static_cast<double>(c.d) * ls_of(c.code[e / spec.scale_elems]) * spec.unit * (sign * l + c.delta[k]);
}

}  // namespace ridge::kernels
