// `ridge bench --svg` charts from a hand-built report: well-formed XML (parsed by a strict
// parser), the expected series per context, ceilings above measurements, the knee where the
// roofline formula puts it, and no fraction drawn for a miscounted point.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "analysis/bench.h"
#include "analysis/xml_lite.h"

namespace ridge::analysis {
namespace {

using testing::XmlElement;
using testing::XmlParser;
using Pts = std::vector<std::pair<double, double>>;

constexpr double kBw = 10e9, kPeak = 100e9;  // roof: 10 GB/s, 100 GFLOP/s

// A point of a model streaming 1 GB of weights per step, 1 kB of KV per token of context and
// 2 GFLOP per sequence, measured at 1.5x its roof time.
BenchPoint point(int64_t batch, int64_t ctx) {
  BenchPoint p;
  p.batch = batch;
  p.context = ctx;
  const double b = static_cast<double>(batch);
  p.step.weight_bytes = 1e9;
  p.step.kv_read_bytes = b * static_cast<double>(ctx) * 1e3;
  p.step.flops = b * 2e9;
  const double roof_s = std::max(p.step.bytes() / kBw, p.step.flops / kPeak);
  p.step_s = 1.5 * roof_s;
  p.decode_tok_s = b / p.step_s;
  p.itl_p50_ms = 1e3 * p.step_s;
  p.itl_p99_ms = 1.3e3 * p.step_s;
  p.verdict.achieved_bytes_per_s = p.step.bytes() / p.step_s;
  p.verdict.achieved_flops_per_s = p.step.flops / p.step_s;
  p.bandwidth_fraction = p.verdict.achieved_bytes_per_s / kBw;
  p.compute_fraction = p.verdict.achieved_flops_per_s / kPeak;
  return p;
}

BenchReport report(bool with_roof) {
  BenchReport r;
  r.model = "test <model> & co";
  r.weight_type = "q8_0";
  r.isa = "avx512";
  r.n_threads = 2;
  if (with_roof) r.roof = {kBw, kPeak, "test roof"};
  for (int64_t ctx : {128, 1024}) {
    for (int64_t b : {1, 4, 16}) r.points.push_back(point(b, ctx));
  }
  return r;
}

std::unique_ptr<XmlElement> parse(const std::string& svg) {
  XmlParser parser(svg);
  auto root = parser.parse();
  EXPECT_TRUE(root) << parser.error();
  return root;
}

Pts points_of(const XmlElement& e) {
  Pts out;
  std::istringstream in(e.attr("points"));
  std::string pair;
  while (in >> pair) {
    const size_t comma = pair.find(',');
    out.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
  }
  return out;
}

std::vector<const XmlElement*> with_class(const XmlElement& root, const std::string& tag,
                                          const std::string& cls) {
  std::vector<const XmlElement*> out;
  for (const XmlElement* e : root.all(tag)) {
    if (e->has_class(cls)) out.push_back(e);
  }
  return out;
}

std::vector<std::string> texts(const XmlElement& root) {
  std::vector<std::string> out;
  for (const XmlElement* t : root.all("text")) out.push_back(t->text);
  return out;
}

bool has_text(const XmlElement& root, const std::string& needle) {
  for (const std::string& t : texts(root)) {
    if (t.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(XmlLite, RejectsMalformedDocuments) {
  for (const char* bad : {"<svg><a></svg>", "<svg a=1/>", "<svg>&foo;</svg>", "<svg a='1' a='2'/>",
                          "<svg><b>x < y</b></svg>", "<svg/><svg/>", "<svg>"}) {
    XmlParser p(bad);
    EXPECT_FALSE(p.parse()) << bad;
  }
  XmlParser good("<svg x='1'><g><text>a &amp; b</text></g><line/></svg>");
  auto root = good.parse();
  ASSERT_TRUE(root) << good.error();
  EXPECT_EQ(root->all("text")[0]->text, "a & b");
}

TEST(BenchSvg, SeriesPerContextWithRoofAndKnee) {
  const std::string svg = bench_svg({report(true)});
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  auto root = parse(svg);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->name, "svg");
  // Two contexts: two series in every panel, one probed-bandwidth line.
  for (const char* cls : {"tok-s", "tok-s-roof", "gbs", "itl-p50", "itl-p99", "pct-bw", "pct-flops"}) {
    auto lines = with_class(*root, "polyline", cls);
    ASSERT_EQ(lines.size(), 2u) << cls;
    for (const XmlElement* l : lines) EXPECT_EQ(points_of(*l).size(), 3u) << cls;
  }
  EXPECT_EQ(with_class(*root, "polyline", "gbs-roof").size(), 1u);
  EXPECT_EQ(with_class(*root, "polyline", "series").size(), 12u);  // 6 panels-series x 2
  const auto tok = with_class(*root, "polyline", "tok-s");
  const auto ceil = with_class(*root, "polyline", "tok-s-roof");
  const auto p50 = with_class(*root, "polyline", "itl-p50");
  const auto p99 = with_class(*root, "polyline", "itl-p99");
  for (size_t s = 0; s < 2; ++s) {
    const Pts m = points_of(*tok[s]), c = points_of(*ceil[s]), a = points_of(*p50[s]),
              b = points_of(*p99[s]);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_LT(c[i].second, m[i].second);  // the ceiling is above the measurement (smaller y)
      EXPECT_DOUBLE_EQ(c[i].first, m[i].first);
      EXPECT_LT(b[i].second, a[i].second);  // p99 above p50
      if (i > 0) {
        EXPECT_GT(m[i].first, m[i - 1].first);    // batch grows to the right
        EXPECT_LT(m[i].second, m[i - 1].second);  // and throughput grows with it here
      }
    }
  }
  // Axis labels of the four panels; batch ticks at the measured sizes.
  EXPECT_EQ(with_class(*root, "text", "xlabel").size(), 4u);
  EXPECT_EQ(with_class(*root, "text", "ylabel").size(), 4u);
  for (const char* label : {"tokens/s (all sequences)", "GB/s (ideal bytes)", "ms per step",
                            "% of probed roof", "batch size (sequences)"}) {
    EXPECT_TRUE(has_text(*root, label)) << label;
  }
  const std::vector<std::string> all_texts = texts(*root);
  for (const char* tick : {"1", "4", "16"}) {
    EXPECT_NE(std::find(all_texts.begin(), all_texts.end(), tick), all_texts.end()) << tick;
  }
  EXPECT_TRUE(has_text(*root, "probed read 10.0 GB/s"));
  EXPECT_TRUE(has_text(*root, "test <model> & co"));  // escaped in the file, decoded here
  // Knee: ceil((W/BW) / (F/peak - K/BW)) = ceil(0.1 / (0.02 - 128e3/1e10)) = 6 (1024: also 6).
  EXPECT_EQ(with_class(*root, "line", "knee").size(), 2u);
  EXPECT_TRUE(has_text(*root, "knee 6"));
  EXPECT_TRUE(has_text(*root, "ctx 128 · knee (decode turns compute-bound) at batch 6"));
}

TEST(BenchSvg, NoRoofNoCeilingAndMiscountsAreNotDrawnAsFractions) {
  auto root = parse(bench_svg({report(false)}));
  ASSERT_TRUE(root);
  EXPECT_EQ(with_class(*root, "polyline", "roof").size(), 0u);
  EXPECT_EQ(with_class(*root, "line", "knee").size(), 0u);
  EXPECT_EQ(with_class(*root, "polyline", "pct-bw").size(), 0u);
  EXPECT_EQ(with_class(*root, "polyline", "tok-s").size(), 2u);

  BenchReport r = report(true);
  r.points[1].miscount = true;  // ctx 128, batch 4
  r.points[1].bandwidth_fraction = 1.2;
  root = parse(bench_svg({r}));
  ASSERT_TRUE(root);
  const auto pct = with_class(*root, "polyline", "pct-bw");
  ASSERT_EQ(pct.size(), 2u);
  EXPECT_EQ(points_of(*pct[0]).size(), 2u);  // the miscounted point is left out
  EXPECT_EQ(points_of(*pct[1]).size(), 3u);
  for (const XmlElement* l : pct) {
    for (const auto& [x, y] : points_of(*l)) EXPECT_GE(y, 440.0);  // inside the panel (top 440)
  }
}

TEST(BenchSvg, TwoReportsAreSeparateSeries) {
  BenchReport a = report(true), b = report(true);
  b.weight_type = "q4_0";
  auto root = parse(bench_svg({a, b}));
  ASSERT_TRUE(root);
  EXPECT_EQ(with_class(*root, "polyline", "tok-s").size(), 4u);
  EXPECT_TRUE(has_text(*root, "q4_0 · ctx 1024"));
  EXPECT_EQ(with_class(*root, "polyline", "gbs-roof").size(), 1u);  // the same roof once
}

}  // namespace
}  // namespace ridge::analysis
