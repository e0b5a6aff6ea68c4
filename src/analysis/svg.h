// A small hand-written SVG writer shared by the charts of `ridge roofline --svg` and
// `ridge bench --svg`: panels with log or linear axes, grid and tick labels, polylines, markers,
// text. No dependencies; the output is one self-contained SVG document. Every coordinate is
// printed with fixed decimals (never nan/inf: callers clamp to the panel's range).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ridge::analysis::svg {

inline constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                          "#9467bd", "#8c564b", "#e377c2", "#17becf"};
inline constexpr int kNumColors = 8;
inline constexpr const char* kDashes[] = {"", "6,3", "2,3", "8,3,2,3"};
inline constexpr int kNumDashes = 4;

// &, <, >, " and ' escaped for text and attribute values.
std::string escape(std::string_view in);
// 1500 -> "1.5k", 2e9 -> "2G".
std::string si(double v);

// One axis: log (lo, hi are log10 of the ends) or linear (lo, hi in data units).
struct Axis {
  double lo = 0, hi = 1;
  bool log = true;
  std::vector<double> explicit_ticks;  // data units; replaces the automatic ticks when not empty
  double fraction(double v) const;  // 0 at lo, 1 at hi
  std::vector<double> ticks() const;  // decades (log) or 4-8 round steps (linear), data units
};
// Whole decades around [lo, hi] (at least two), lo clamped above 0.
Axis log_axis(double lo, double hi);
// [0, a round number >= hi] (at least [0, 1] when hi <= 0).
Axis linear_axis(double hi);

// A chart panel: a pixel box (y0 = top) and its two axes.
struct Panel {
  double x0 = 0, y0 = 0, w = 100, h = 100;
  Axis x, y;
  double px(double v) const { return x0 + w * x.fraction(v); }
  double py(double v) const { return y0 + h - h * y.fraction(v); }
};

// Frame, grid lines and tick labels, title above, axis labels below and to the left.
void draw_axes(std::string& s, const Panel& p, std::string_view title, std::string_view x_label,
               std::string_view y_label);

// <svg> with a white background / </svg>.
std::string begin_document(int width, int height);
std::string end_document();

// A polyline through data points of panel p (class attribute, e.g. "series", lets tests and
// style sheets find it); nothing when pts is empty.
std::string polyline(const Panel& p, const std::vector<std::pair<double, double>>& pts,
                     std::string_view color, std::string_view dash, double width,
                     std::string_view css_class);
// A circle marker at a data point, with a tooltip.
std::string marker(const Panel& p, double x, double y, std::string_view color, bool filled,
                   std::string_view tooltip);
// Text at pixel coordinates.
std::string text(double x, double y, std::string_view content, int size,
                 std::string_view color = "#000", std::string_view anchor = "start");
// A legend line: a short stroke then a label, at pixel coordinates (y = text baseline).
std::string legend_entry(double x, double y, std::string_view color, std::string_view dash,
                         std::string_view label);

}  // namespace ridge::analysis::svg
