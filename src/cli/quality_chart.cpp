#include "cli/quality_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analysis/svg.h"

namespace svg = ridge::analysis::svg;

namespace ridge::cli {

void mark_frontier(std::vector<QualityRow>& rows) {
  for (QualityRow& r : rows) {
    r.frontier = std::none_of(rows.begin(), rows.end(), [&](const QualityRow& o) {
      if (&o == &r) return false;
      const bool no_worse = o.bytes_per_token <= r.bytes_per_token && o.kld <= r.kld;
      const bool better = o.bytes_per_token < r.bytes_per_token || o.kld < r.kld;
      return no_worse && better;
    });
  }
}

std::string format_quality_table(const std::vector<QualityRow>& rows, const std::vector<std::string>& hw_names,
                                 int64_t n_scored, const std::string& text_name) {
  std::string s = fmt::format("quality per byte: KL divergence from {} over {} scored tokens of {}\n\n", rows.front().label,
                              n_scored, text_name);
  s += fmt::format("{:<8} {:>9} {:>6} {:>9} {:>11} {:>10} {:>10} {:>10} {:>8} {:>7} {:>10}", "type", "file MiB", "bpw",
                   "fallback", "MB/token", "PPL", "mean KLD", "KLD p99", "same top", "RMS Δp", "tok/s here");
  for (const std::string& hw : hw_names) s += fmt::format(" {:>12}", "tok/s " + hw);
  s += "  frontier\n";
  for (const QualityRow& r : rows) {
    s += fmt::format("{:<8} {:>9.1f} {:>6.2f} {:>9} {:>11.2f} {:>10.4f} {:>10.6f} {:>10.5f} {:>7.1f}% {:>6.2f}% {:>10.1f}", r.label,
                     r.file_bytes / (1 << 20), r.bits_per_weight, r.n_fallback, r.bytes_per_token / 1e6, r.ppl, r.kld,
                     r.kld_99, 100 * r.same_top, 100 * r.rms_dp, r.measured_tok_s);
    for (double t : r.projected_tok_s) s += fmt::format(" {:>12.1f}", t);
    s += r.frontier ? "  *" : "";
    s += r.base ? "  (base)\n" : "\n";
  }
  s += "\n* on the frontier: no other file has both fewer bytes per token and a lower KL divergence\n"
       "fallback: tensors whose row length the type cannot hold, written in llama.cpp's fallback type instead\n";
  return s;
}

std::string quality_svg(const std::vector<QualityRow>& rows, const std::string& title) {
  constexpr int kW = 720, kH = 440;
  double lo_b = rows.front().bytes_per_token, hi_b = lo_b, lo_k = 1e9, hi_k = 1e-9;
  for (const QualityRow& r : rows) {
    lo_b = std::min(lo_b, r.bytes_per_token);
    hi_b = std::max(hi_b, r.bytes_per_token);
    if (r.kld > 0) {
      lo_k = std::min(lo_k, r.kld);
      hi_k = std::max(hi_k, r.kld);
    }
  }
  if (lo_k > hi_k) lo_k = hi_k = 1e-6;
  const double floor_k = lo_k / 10;  // the base (KLD 0) sits on the bottom edge
  svg::Panel p;
  p.x0 = 80;
  p.y0 = 40;
  p.w = kW - 120;
  p.h = kH - 110;
  p.x = svg::log_axis(lo_b / 1e6 * 0.8, hi_b / 1e6 * 1.25);
  p.y = svg::log_axis(floor_k, hi_k * 2);
  std::string s = svg::begin_document(kW, kH);
  svg::draw_axes(s, p, "quality per byte: " + title, "MB read per decoded token", "mean KL divergence from the base");
  std::vector<QualityRow> front;
  for (const QualityRow& r : rows) {
    if (r.frontier) front.push_back(r);
  }
  std::sort(front.begin(), front.end(), [](const QualityRow& a, const QualityRow& b) { return a.bytes_per_token < b.bytes_per_token; });
  std::vector<std::pair<double, double>> pts;
  for (const QualityRow& r : front) pts.emplace_back(r.bytes_per_token / 1e6, std::max(r.kld, floor_k));
  if (pts.size() > 1) s += svg::polyline(p, pts, "#1f77b4", "", 1.5, "frontier");
  for (const QualityRow& r : rows) {
    const double x = r.bytes_per_token / 1e6, y = std::max(r.kld, floor_k);
    s += svg::marker(p, x, y, r.frontier ? "#1f77b4" : "#999999", r.frontier,
                     fmt::format("{}: {:.2f} MB/token, mean KLD {:.6f}", r.label, x, r.kld));
    s += svg::text(p.px(x) + 6, p.py(y) - 6, r.label, 11);
  }
  s += svg::legend_entry(p.x0 + 10, kH - 30, "#1f77b4", "", "on the frontier (filled), joined");
  s += svg::end_document();
  return s;
}

}  // namespace ridge::cli
