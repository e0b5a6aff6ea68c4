// Hand-written SVG: (left) the log-log roofline, attainable FLOP/s against FLOP/byte, with each
// device's roof and the model's phases as points; (right) the decode throughput ceiling against
// batch size. No dependencies; one self-contained file.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/roofline.h"
#include "analysis/svg.h"

namespace ridge::analysis {
namespace {

using svg::kColors;
using svg::kDashes;
using svg::escape;

// Panel with log axes on whole decades around the data.
svg::Panel log_panel(double x0, double y0, double x_lo, double x_hi, double y_lo, double y_hi) {
  return {x0, y0, 440, 340, svg::log_axis(x_lo, x_hi), svg::log_axis(y_lo, y_hi)};
}

}  // namespace

std::string roofline_svg(const std::vector<RooflineResult>& results) {
  // One color per hardware (and precision), one dash pattern per result of that hardware.
  std::map<std::string, size_t> hw_color;
  for (const auto& r : results) {
    std::string key = r.hw.name + "/" + std::string(precision_name(r.precision));
    hw_color.emplace(key, hw_color.size());
  }
  auto color_of = [&](const RooflineResult& r) {
    return kColors[hw_color[r.hw.name + "/" + std::string(precision_name(r.precision))] % 8];
  };

  double ix_lo = 1e30, ix_hi = 0, fy_lo = 1e30, fy_hi = 0, b_lo = 1e30, b_hi = 0, t_lo = 1e30, t_hi = 0;
  for (const auto& r : results) {
    ix_lo = std::min(ix_lo, r.ridge);
    ix_hi = std::max(ix_hi, r.ridge);
    fy_hi = std::max(fy_hi, r.peak_flops);
    auto take = [&](const PhasePoint& p) {
      ix_lo = std::min(ix_lo, p.intensity);
      ix_hi = std::max(ix_hi, p.intensity);
      fy_lo = std::min(fy_lo, p.attainable_flops);
    };
    take(r.prefill);
    for (const auto& p : r.decode) {
      take(p);
      b_lo = std::min(b_lo, static_cast<double>(p.batch));
      b_hi = std::max(b_hi, static_cast<double>(p.batch));
      t_lo = std::min(t_lo, p.tok_s_total);
      t_hi = std::max(t_hi, p.tok_s_total);
    }
  }
  const int n_legend = static_cast<int>(results.size());
  const int height = 470 + 16 * n_legend;
  std::string s = svg::begin_document(1120, height);
  if (results.empty()) return s + svg::end_document();

  const svg::Panel a = log_panel(80, 40, ix_lo / 2, ix_hi * 2, fy_lo / 2, fy_hi * 2);
  svg::draw_axes(s, a, "roofline", "arithmetic intensity (FLOP/byte)", "attainable FLOP/s");
  const double x_min = std::pow(10, a.x.lo), x_max = std::pow(10, a.x.hi), y_min = std::pow(10, a.y.lo);
  std::map<std::string, bool> drawn;
  for (const auto& r : results) {
    std::string key = r.hw.name + "/" + std::string(precision_name(r.precision));
    if (drawn[key]) continue;
    drawn[key] = true;
    const double bw = r.hw.bandwidth_bytes_per_s();
    double xs = std::max(x_min, y_min / bw);
    s += fmt::format("<polyline fill='none' stroke='{}' stroke-width='2' points='{:.1f},{:.1f} {:.1f},{:.1f} "
                     "{:.1f},{:.1f}'/>\n", color_of(r), a.px(xs), a.py(bw * xs), a.px(r.ridge),
                     a.py(r.peak_flops), a.px(x_max), a.py(r.peak_flops));
    s += fmt::format("<text x='{:.1f}' y='{:.1f}' font-size='11' fill='{}'>{} {} ridge {:.0f}</text>\n",
                     a.px(r.ridge) + 4, a.py(r.peak_flops) - 5, color_of(r), escape(r.hw.name),
                     precision_name(r.precision), r.ridge);
  }
  for (const auto& r : results) {
    const char* c = color_of(r);
    const auto& pf = r.prefill;
    s += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='8' height='8' fill='{}'><title>prefill {} tokens: "
                     "{:.1f} FLOP/byte</title></rect>\n", a.px(pf.intensity) - 4,
                     a.py(pf.attainable_flops) - 4, c, pf.n_tokens, pf.intensity);
    for (const auto& p : r.decode) {
      s += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='4' fill='none' stroke='{}' stroke-width='1.5'>"
                       "<title>decode batch {}: {:.2f} FLOP/byte</title></circle>\n",
                       a.px(p.intensity), a.py(p.attainable_flops), c, p.batch, p.intensity);
      s += fmt::format("<text x='{:.1f}' y='{:.1f}' font-size='9' fill='{}'>{}</text>\n", a.px(p.intensity) + 5,
                       a.py(p.attainable_flops) + 12, c, p.batch);
    }
  }
  s += fmt::format("<text x='{}' y='{}' font-size='10' fill='#555'>circles: decode (label = batch) · "
                   "squares: prefill</text>\n", a.x0 + 5, a.y0 + 14);

  svg::Panel t = log_panel(640, 40, std::max(b_lo, 1.0), std::max(b_hi, 10.0), t_lo / 2, t_hi * 2);
  t.x.lo = 0;  // batch 1 at the left edge
  svg::draw_axes(s, t, "decode throughput ceiling", "batch size (sequences)", "tokens/s (all sequences)");
  std::map<std::string, size_t> dash_i;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    size_t d = dash_i[r.hw.name]++ % 4;
    std::string pts;
    for (const auto& p : r.decode) pts += fmt::format("{:.1f},{:.1f} ", t.px(static_cast<double>(p.batch)), t.py(p.tok_s_total));
    s += fmt::format("<polyline fill='none' stroke='{}' stroke-width='2' stroke-dasharray='{}' points='{}'/>\n",
                     color_of(r), kDashes[d], pts);
    for (const auto& p : r.decode) {
      // Filled where compute-bound, hollow (outlined) where memory-bound.
      s += svg::marker(t, static_cast<double>(p.batch), p.tok_s_total, color_of(r), p.compute_bound,
                       fmt::format("batch {}: {:.1f} tok/s{}", p.batch, p.tok_s_total,
                                   p.compute_bound ? " (compute-bound)" : " (memory-bound)"));
    }
    const int ly = 440 + 16 * static_cast<int>(i);
    s += fmt::format("<line x1='80' y1='{}' x2='110' y2='{}' stroke='{}' stroke-width='2' "
                     "stroke-dasharray='{}'/>\n", ly - 4, ly - 4, color_of(r), kDashes[d]);
    s += fmt::format("<text x='116' y='{}' font-size='11'>{} · {} weights · {} KV · ctx {} · {} "
                     "({} {:.4g} TFLOP/s, {:.0f} GB/s)</text>\n", ly, escape(r.model),
                     escape(r.weight_type), r.kv_type, r.context, escape(r.hw.name),
                     precision_name(r.precision), r.peak_flops / 1e12, r.hw.bandwidth_gbs);
  }
  return s + svg::end_document();
}

}  // namespace ridge::analysis
