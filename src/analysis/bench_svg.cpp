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

}  // namespace

std::string bench_svg(const std::vector<BenchReport>& reports) {
  const std::vector<Series> series = make_series(reports);
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
  const svg::Panel tok{80, 60, 440, 300, bx, svg::log_axis(tok_lo / 1.5, tok_hi * 1.5)};
  const svg::Panel gbs{640, 60, 440, 300, bx, svg::linear_axis(gbs_hi * 1.05)};
  const svg::Panel itl{80, 440, 440, 300, bx, svg::linear_axis(itl_hi * 1.05)};
  const svg::Panel pct{640, 440, 440, 300, bx, svg::linear_axis(100)};

  const int n_legend = static_cast<int>(series.size()) + 3;
  std::string s = svg::begin_document(1120, 800 + 16 * n_legend);
  if (!reports.empty()) {
    const BenchReport& r = reports.front();
    s += svg::text(80, 22, fmt::format("ridge bench · {} ({}) · {} kernels · {} thread{} · roof: {}",
                                       r.model, r.weight_type, r.isa, r.n_threads,
                                       r.n_threads == 1 ? "" : "s", r.roof.source),
                   13);
  }
  svg::draw_axes(s, tok, "decode throughput", "batch size (sequences)", "tokens/s (all sequences)");
  svg::draw_axes(s, gbs, "achieved bandwidth", "batch size (sequences)", "GB/s (ideal bytes)");
  svg::draw_axes(s, itl, "inter-token latency", "batch size (sequences)", "ms per step");
  svg::draw_axes(s, pct, "fraction of the roof", "batch size (sequences)", "% of probed roof");

  double ly = 800;
  for (const Series& se : series) {
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
    s += svg::polyline(tok, measured, c, "", 2, "series tok-s");
    s += svg::polyline(tok, ceiling, c, "6,3", 1.5, "roof tok-s-roof");
    s += svg::polyline(gbs, bw, c, "", 2, "series gbs");
    s += svg::polyline(itl, p50, c, "", 2, "series itl-p50");
    s += svg::polyline(itl, p99, c, "6,3", 1.5, "series itl-p99");
    s += svg::polyline(pct, bw_pct, c, "", 2, "series pct-bw");
    s += svg::polyline(pct, fl_pct, c, "2,3", 1.5, "series pct-flops");
    for (const BenchPoint* p : se.points) {
      const double b = static_cast<double>(p->batch);
      s += svg::marker(tok, b, p->decode_tok_s, c, true,
                       fmt::format("batch {} ctx {}: {:.1f} tok/s, {}", p->batch, p->context,
                                   p->decode_tok_s, p->verdict.text));
      s += svg::marker(gbs, b, p->verdict.achieved_bytes_per_s / 1e9, c, true,
                       fmt::format("batch {}: {:.2f} GB/s", p->batch, p->verdict.achieved_bytes_per_s / 1e9));
    }
    std::string knee_note = "knee: unknown (no roof)";
    if (auto k = knee_batch(se)) {
      knee_note = fmt::format("knee (decode turns compute-bound) at batch {}", *k);
      const double kb = static_cast<double>(*k);
      if (tok.x.fraction(kb) >= 0 && tok.x.fraction(kb) <= 1) {
        s += fmt::format("<line class='knee' x1='{:.1f}' y1='{}' x2='{:.1f}' y2='{}' stroke='{}' "
                         "stroke-dasharray='2,3'/>\n", tok.px(kb), tok.y0, tok.px(kb), tok.y0 + tok.h, c);
        s += svg::text(tok.px(kb) + 3, tok.y0 + 12, fmt::format("knee {}", *k), 10, c);
      } else {
        knee_note += " (beyond the sweep)";
      }
    } else if (roof.bandwidth_bytes_per_s > 0 && roof.peak_flops > 0) {
      knee_note = "knee: none (per-sequence KV traffic outweighs its arithmetic)";
    }
    s += svg::legend_entry(80, ly, c, "", fmt::format("{} · {}", se.label, knee_note));
    ly += 16;
  }
  // The probed read bandwidth, once per distinct roof.
  std::map<double, bool> roofs;
  for (const Series& se : series) {
    const double r = se.report->roof.bandwidth_bytes_per_s / 1e9;
    if (r <= 0 || roofs[r]) continue;
    roofs[r] = true;
    s += svg::polyline(gbs, {{std::pow(10, bx.lo), r}, {std::pow(10, bx.hi), r}}, "#000", "6,3",
                       1.5, "roof gbs-roof");
    s += svg::text(gbs.x0 + gbs.w - 4, gbs.py(r) - 4, fmt::format("probed read {:.1f} GB/s", r),
                   10, "#000", "end");
  }
  s += svg::legend_entry(80, ly, "#555", "6,3",
                         "dashed: roofline ceiling of the same bytes and FLOPs (throughput), p99 "
                         "(latency), probed read bandwidth (GB/s)");
  s += svg::legend_entry(80, ly + 16, "#555", "",
                         "solid: measured decode tok/s, GB/s, p50 latency, % of bandwidth roof");
  s += svg::legend_entry(80, ly + 32, "#555", "2,3", "dotted: % of the compute peak");
  return s + svg::end_document();
}

}  // namespace ridge::analysis
