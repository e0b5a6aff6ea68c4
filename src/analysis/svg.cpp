// The shared SVG writer (see svg.h).
#include "analysis/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ridge::analysis::svg {

std::string escape(std::string_view in) {
  std::string out;
  for (char c : in) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string si(double v) {
  const char* units[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::abs(v) >= 1000 && i < 6) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:g}{}", v, units[i]);
}

double Axis::fraction(double v) const {
  double t = log ? std::log10(std::max(v, 1e-300)) : v;
  double f = hi > lo ? (t - lo) / (hi - lo) : 0.0;
  return std::isfinite(f) ? f : 0.0;
}

std::vector<double> Axis::ticks() const {
  if (!explicit_ticks.empty()) return explicit_ticks;
  std::vector<double> out;
  if (log) {
    for (double e = lo; e <= hi + 1e-9; e += 1) out.push_back(std::pow(10, e));
    return out;
  }
  // A round step giving 4-8 intervals: 1, 2 or 5 times a power of ten.
  const double span = hi - lo;
  double step = std::pow(10, std::floor(std::log10(span / 4)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (span / (step * m) <= 8) {
      step *= m;
      break;
    }
  }
  for (double v = lo; v <= hi + step * 1e-6; v += step) out.push_back(v);
  return out;
}

Axis log_axis(double lo, double hi) {
  lo = std::max(lo, 1e-30);
  hi = std::max(hi, lo);
  Axis a;
  a.log = true;
  a.lo = std::floor(std::log10(lo));
  a.hi = std::ceil(std::log10(hi));
  if (a.hi - a.lo < 2) a.hi = a.lo + 2;
  return a;
}

Axis linear_axis(double hi) {
  Axis a;
  a.log = false;
  a.lo = 0;
  if (!(hi > 0) || !std::isfinite(hi)) {
    a.hi = 1;
    return a;
  }
  const double p = std::pow(10, std::floor(std::log10(hi)));
  for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
    if (m * p >= hi) {
      a.hi = m * p;
      break;
    }
  }
  return a;
}

void draw_axes(std::string& s, const Panel& a, std::string_view title, std::string_view x_label,
               std::string_view y_label) {
  s += fmt::format("<rect x='{}' y='{}' width='{}' height='{}' fill='none' stroke='#333'/>\n", a.x0,
                   a.y0, a.w, a.h);
  for (double v : a.x.ticks()) {
    const double x = a.px(v);
    s += fmt::format("<line x1='{:.1f}' y1='{}' x2='{:.1f}' y2='{}' stroke='#ddd'/>\n", x, a.y0, x,
                     a.y0 + a.h);
    s += text(x, a.y0 + a.h + 15, si(v), 11, "#000", "middle");
  }
  for (double v : a.y.ticks()) {
    const double y = a.py(v);
    s += fmt::format("<line x1='{}' y1='{:.1f}' x2='{}' y2='{:.1f}' stroke='#ddd'/>\n", a.x0, y,
                     a.x0 + a.w, y);
    s += text(a.x0 - 5, y + 4, si(v), 11, "#000", "end");
  }
  s += fmt::format("<text class='title' x='{}' y='{}' font-size='14' text-anchor='middle'>{}</text>\n",
                   a.x0 + a.w / 2, a.y0 - 10, escape(title));
  s += fmt::format("<text class='xlabel' x='{}' y='{}' font-size='12' text-anchor='middle'>{}</text>\n",
                   a.x0 + a.w / 2, a.y0 + a.h + 32, escape(x_label));
  s += fmt::format("<text class='ylabel' x='{}' y='{}' font-size='12' text-anchor='middle' "
                   "transform='rotate(-90 {} {})'>{}</text>\n",
                   a.x0 - 48, a.y0 + a.h / 2, a.x0 - 48, a.y0 + a.h / 2, escape(y_label));
}

std::string begin_document(int width, int height) {
  return fmt::format("<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' "
                     "font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n",
                     width, height);
}

std::string end_document() { return "</svg>\n"; }

std::string polyline(const Panel& p, const std::vector<std::pair<double, double>>& pts,
                     std::string_view color, std::string_view dash, double width,
                     std::string_view css_class) {
  if (pts.empty()) return {};
  std::string coords;
  for (const auto& [x, y] : pts) {
    coords += fmt::format("{}{:.1f},{:.1f}", coords.empty() ? "" : " ", p.px(x), p.py(y));
  }
  return fmt::format("<polyline class='{}' fill='none' stroke='{}' stroke-width='{}' "
                     "stroke-dasharray='{}' points='{}'/>\n",
                     escape(css_class), color, width, dash, coords);
}

std::string marker(const Panel& p, double x, double y, std::string_view color, bool filled,
                   std::string_view tooltip) {
  return fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='3' fill='{}' stroke='{}' "
                     "stroke-width='1.5'><title>{}</title></circle>\n",
                     p.px(x), p.py(y), filled ? color : "white", color, escape(tooltip));
}

std::string text(double x, double y, std::string_view content, int size, std::string_view color,
                 std::string_view anchor) {
  return fmt::format("<text x='{:.1f}' y='{:.1f}' font-size='{}' fill='{}' text-anchor='{}'>{}</text>\n",
                     x, y, size, color, anchor, escape(content));
}

std::string legend_entry(double x, double y, std::string_view color, std::string_view dash,
                         std::string_view label) {
  return fmt::format("<line x1='{:.1f}' y1='{:.1f}' x2='{:.1f}' y2='{:.1f}' stroke='{}' "
                     "stroke-width='2' stroke-dasharray='{}'/>\n",
                     x, y - 4, x + 30, y - 4, color, dash) +
         text(x + 36, y, label, 11);
}

}  // namespace ridge::analysis::svg
