// `ridge bench --svg`: four panels against batch size, one series per (model, context depth):
// decode throughput with the roofline ceiling of each point's bytes and FLOPs (and the knee
// where decode would turn compute-bound), achieved GB/s under the probed read bandwidth,
// inter-token latency p50/p99, and the fraction of the roof. Drawn with the shared writer
// (svg.h) that also draws `ridge roofline --svg`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "analysis/bench.h"
#include "analysis/svg.h"

namespace ridge::analysis {
namespace {

using Points = std::vector<std::pair<double, double>>;

// One series: the points of one report at one context depth, in batch order.
struct Series {
  const BenchReport* report = nullptr;
  int64_t context = 0;
  std::vector<const BenchPoint*> points;
  std::string label;
  const char* color = "";
};

std::vector<Series> make_series(const std::vector<BenchReport>& reports) {
  std::vector<Series> out;
  for (const BenchReport& r : reports) {
    std::map<int64_t, Series> by_ctx;
    for (const BenchPoint& p : r.points) {
      Series& s = by_ctx[p.context];
      s.report = &r;
      s.context = p.context;
      s.points.push_back(&p);
    }
    for (auto& [ctx, s] : by_ctx) {
      std::sort(s.points.begin(), s.points.end(),
                [](const BenchPoint* a, const BenchPoint* b) { return a->batch < b->batch; });
      s.label = reports.size() > 1 ? fmt::format("{} {} · ctx {}", r.model, r.weight_type, ctx)
                                   : fmt::format("ctx {}", ctx);
      s.color = svg::kColors[out.size() % svg::kNumColors];
      out.push_back(std::move(s));
    }
  }
  return out;
}

// The roofline ceiling of a measured point: all sequences' tokens over max(bytes / bandwidth,
// FLOPs / peak) of its mean step (peak 0: bandwidth alone). 0 when the roof is unknown.
double ceiling_tok_s(const BenchPoint& p, const BenchRoof& roof) {
  if (roof.bandwidth_bytes_per_s <= 0) return 0;
  double t = p.step.bytes() / roof.bandwidth_bytes_per_s;
  if (roof.peak_flops > 0) t = std::max(t, p.step.flops / roof.peak_flops);
  return t > 0 ? static_cast<double>(p.batch) / t : 0;
}

// Smallest batch at which decode turns compute-bound, from the largest point's per-sequence
// bytes and FLOPs (as `ridge roofline` computes it); nullopt: never, or the roof is unknown.
std::optional<int64_t> knee_batch(const Series& s) {
  const BenchRoof& roof = s.report->roof;
  const BenchPoint& p = *s.points.back();
  if (roof.bandwidth_bytes_per_s <= 0 || roof.peak_flops <= 0 || p.batch < 1) return std::nullopt;
  const double b = static_cast<double>(p.batch);
  const double per_seq_bytes = (p.step.bytes() - p.step.weight_bytes) / b;
  const double gain = p.step.flops / b / roof.peak_flops - per_seq_bytes / roof.bandwidth_bytes_per_s;
  if (gain <= 0) return std::nullopt;
  const double k = std::ceil(p.step.weight_bytes / roof.bandwidth_bytes_per_s / gain);
  if (!(k < 1e15)) return std::nullopt;
  return std::max<int64_t>(1, static_cast<int64_t>(k));
}

// The batch axis: log scale, ticks at the measured batch sizes.
svg::Axis batch_axis(const std::vector<Series>& series) {
  std::vector<double> batches;
  for (const Series& s : series) {
    for (const BenchPoint* p : s.points) batches.push_back(static_cast<double>(p->batch));
  }
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  svg::Axis a;
  a.log = true;
  a.lo = std::log10(batches.empty() ? 1.0 : batches.front()) - 0.1;
  a.hi = std::log10(batches.empty() ? 1.0 : batches.back()) + 0.1;
  a.explicit_ticks = batches;
  return a;
}

// The four panels (2 x 2), their value ranges from every series and its roof.
struct Panels {
  svg::Panel tok, gbs, itl, pct;
};

Panels make_panels(const std::vector<Series>& series) {
  const svg::Axis bx = batch_axis(series);
  double tok_lo = 1e300, tok_hi = 0, gbs_hi = 0, itl_hi = 0;
  for (const Series& s : series) {
    gbs_hi = std::max(gbs_hi, s.report->roof.bandwidth_bytes_per_s / 1e9);
    for (const BenchPoint* p : s.points) {
      for (double v : {p->decode_tok_s, ceiling_tok_s(*p, s.report->roof)}) {
        if (v > 0) {
          tok_lo = std::min(tok_lo, v);
          tok_hi = std::max(tok_hi, v);
        }
      }
      gbs_hi = std::max(gbs_hi, p->verdict.achieved_bytes_per_s / 1e9);
      itl_hi = std::max({itl_hi, p->itl_p50_ms, p->itl_p99_ms});
    }
  }
  if (tok_hi <= 0) {  // nothing measured: any decade
    tok_lo = 1;
    tok_hi = 10;
  }
  return {{80, 60, 440, 300, bx, svg::log_axis(tok_lo / 1.5, tok_hi * 1.5)},
          {640, 60, 440, 300, bx, svg::linear_axis(gbs_hi * 1.05)},
          {80, 440, 440, 300, bx, svg::linear_axis(itl_hi * 1.05)},
          {640, 440, 440, 300, bx, svg::linear_axis(100)}};
}

// One series' lines and markers in every panel.
void draw_series(std::string& s, const Panels& pn, const Series& se) {
  const BenchRoof& roof = se.report->roof;
  Points measured, ceiling, bw, p50, p99, bw_pct, fl_pct;
  for (const BenchPoint* p : se.points) {
    const double b = static_cast<double>(p->batch);
    measured.emplace_back(b, p->decode_tok_s);
    if (double c = ceiling_tok_s(*p, roof); c > 0) ceiling.emplace_back(b, c);
    bw.emplace_back(b, p->verdict.achieved_bytes_per_s / 1e9);
    p50.emplace_back(b, p->itl_p50_ms);
    p99.emplace_back(b, p->itl_p99_ms);
    // A miscount has no valid fraction (never drawn above 100%).
    if (roof.bandwidth_bytes_per_s > 0 && !p->miscount) bw_pct.emplace_back(b, 100 * p->bandwidth_fraction);
    if (roof.peak_flops > 0 && !p->miscount) fl_pct.emplace_back(b, 100 * p->compute_fraction);
  }
  const char* c = se.color;
  s += svg::polyline(pn.tok, measured, c, "", 2, "series tok-s");
  s += svg::polyline(pn.tok, ceiling, c, "6,3", 1.5, "roof tok-s-roof");
  s += svg::polyline(pn.gbs, bw, c, "", 2, "series gbs");
  s += svg::polyline(pn.itl, p50, c, "", 2, "series itl-p50");
  s += svg::polyline(pn.itl, p99, c, "6,3", 1.5, "series itl-p99");
  s += svg::polyline(pn.pct, bw_pct, c, "", 2, "series pct-bw");
  s += svg::polyline(pn.pct, fl_pct, c, "2,3", 1.5, "series pct-flops");
  for (const BenchPoint* p : se.points) {
    const double b = static_cast<double>(p->batch);
    const double gb = p->verdict.achieved_bytes_per_s / 1e9;
    s += svg::marker(pn.tok, b, p->decode_tok_s, c, true,
                     fmt::format("batch {} ctx {}: {:.1f} tok/s, {}", p->batch, p->context,
                                 p->decode_tok_s, p->verdict.text));
    s += svg::marker(pn.gbs, b, gb, c, true, fmt::format("batch {}: {:.2f} GB/s", p->batch, gb));
  }
}

// Marks the series' knee on the throughput panel when it lies inside; returns the legend note.
std::string draw_knee(std::string& s, const svg::Panel& tok, const Series& se) {
  const BenchRoof& roof = se.report->roof;
  const auto k = knee_batch(se);
  if (!k) {
    return roof.bandwidth_bytes_per_s > 0 && roof.peak_flops > 0
               ? "knee: none (per-sequence KV traffic outweighs its arithmetic)"
               : "knee: unknown (no roof)";
  }
  std::string note = fmt::format("knee (decode turns compute-bound) at batch {}", *k);
  const double kb = static_cast<double>(*k);
  if (tok.x.fraction(kb) < 0 || tok.x.fraction(kb) > 1) return note + " (beyond the sweep)";
  s += fmt::format("<line class='knee' x1='{:.1f}' y1='{}' x2='{:.1f}' y2='{}' stroke='{}' "
                   "stroke-dasharray='2,3'/>\n", tok.px(kb), tok.y0, tok.px(kb), tok.y0 + tok.h,
                   se.color);
  s += svg::text(tok.px(kb) + 3, tok.y0 + 12, fmt::format("knee {}", *k), 10, se.color);
  return note;
}

// The probed read bandwidth on the GB/s panel, once per distinct roof.
void draw_bandwidth_roofs(std::string& s, const svg::Panel& gbs, const std::vector<Series>& series) {
  std::map<double, bool> drawn;
  for (const Series& se : series) {
    const double r = se.report->roof.bandwidth_bytes_per_s / 1e9;
    if (r <= 0 || drawn[r]) continue;
    drawn[r] = true;
    s += svg::polyline(gbs, {{std::pow(10, gbs.x.lo), r}, {std::pow(10, gbs.x.hi), r}}, "#000",
                       "6,3", 1.5, "roof gbs-roof");
    s += svg::text(gbs.x0 + gbs.w - 4, gbs.py(r) - 4, fmt::format("probed read {:.1f} GB/s", r),
                   10, "#000", "end");
  }
}

}  // namespace

std::string bench_svg(const std::vector<BenchReport>& reports) {
  const std::vector<Series> series = make_series(reports);
  const Panels pn = make_panels(series);
  const int n_legend = static_cast<int>(series.size()) + 3;
  std::string s = svg::begin_document(1120, 800 + 16 * n_legend);
  if (!reports.empty()) {
    const BenchReport& r = reports.front();
    s += svg::text(80, 22, fmt::format("ridge bench · {} ({}) · {} kernels · {} thread{} · roof: {}",
                                       r.model, r.weight_type, r.isa, r.n_threads,
                                       r.n_threads == 1 ? "" : "s", r.roof.source),
                   13);
  }
  const char* batch = "batch size (sequences)";
  svg::draw_axes(s, pn.tok, "decode throughput", batch, "tokens/s (all sequences)");
  svg::draw_axes(s, pn.gbs, "achieved bandwidth", batch, "GB/s (ideal bytes)");
  svg::draw_axes(s, pn.itl, "inter-token latency", batch, "ms per step");
  svg::draw_axes(s, pn.pct, "fraction of the roof", batch, "% of probed roof");
  double ly = 800;
  for (const Series& se : series) {
    draw_series(s, pn, se);
    const std::string knee = draw_knee(s, pn.tok, se);
    s += svg::legend_entry(80, ly, se.color, "", fmt::format("{} · {}", se.label, knee));
    ly += 16;
  }
  draw_bandwidth_roofs(s, pn.gbs, series);
  s += svg::legend_entry(80, ly, "#555", "6,3",
                         "dashed: roofline ceiling of the same bytes and FLOPs (throughput), p99 "
                         "(latency), probed read bandwidth (GB/s)");
  s += svg::legend_entry(80, ly + 16, "#555", "",
                         "solid: measured decode tok/s, GB/s, p50 latency, % of bandwidth roof");
  s += svg::legend_entry(80, ly + 32, "#555", "2,3", "dotted: % of the compute peak");
  return s + svg::end_document();
}

}  // namespace ridge::analysis
