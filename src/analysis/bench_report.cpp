// `ridge bench` output: terminal table, CSV, JSON (schema ridge.bench/1), type comparison.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/bench.h"

namespace ridge::analysis {
namespace {

// A fraction as a percentage, or the miscount flag: never a number above 100%.
std::string pct(double f, bool miscount, bool known) {
  if (miscount && f >= 1.0) return "MISCOUNT";
  if (!known) return "-";
  return fmt::format("{:.0f}%", 100.0 * f);
}

nlohmann::json fraction_json(double f, bool miscount, bool known) {
  if (!known || (miscount && f >= 1.0)) return nullptr;
  return f;
}

// A comparison is bandwidth-bound when the speed ratio is within this factor of the byte ratio.
constexpr double kTrackTolerance = 0.15;

}  // namespace

std::vector<TypeComparison> compare_types(const BenchReport& a, const BenchReport& b) {
  std::vector<TypeComparison> out;
  for (const BenchPoint& pa : a.points) {
    for (const BenchPoint& pb : b.points) {
      if (pa.batch != pb.batch || pa.context != pb.context) continue;
      TypeComparison c;
      c.batch = pa.batch;
      c.context = pa.context;
      c.speed_ratio = pa.decode_tok_s > 0 ? pb.decode_tok_s / pa.decode_tok_s : 0;
      c.byte_ratio = pb.step.bytes() > 0 ? pa.step.bytes() / pb.step.bytes() : 0;
      const double rel = c.byte_ratio > 0 ? c.speed_ratio / c.byte_ratio : 0;
      if (std::abs(rel - 1.0) <= kTrackTolerance) {
        c.verdict = fmt::format("bandwidth-bound: the speed ratio tracks the byte ratio ({:.0f}%)",
                                100.0 * rel);
      } else if (rel < 1.0) {
        c.verdict = fmt::format("not bandwidth-bound: the speed gains only {:.0f}% of the byte "
                                "saving (compute or overhead bound)", 100.0 * rel);
      } else {
        c.verdict = fmt::format("faster than the byte saving ({:.0f}%): cache effects or a "
                                "miscount", 100.0 * rel);
      }
      if (pa.verdict.bound == Bound::kOverhead || pb.verdict.bound == Bound::kOverhead) {
        c.verdict += " (but the steps are overhead-bound: the ratios are dominated by overhead)";
      }
      out.push_back(c);
    }
  }
  return out;
}

std::string format_bench_table(const BenchReport& r) {
  const bool bw_known = r.roof.bandwidth_bytes_per_s > 0;
  const bool fl_known = r.roof.peak_flops > 0;
  std::string s = fmt::format(
      "model {} ({}), {} kernels, weights {}, {} threads, load average {:.1f}\nroof: {:.1f} GB/s, "
      "{:.1f} GFLOP/s ({})\n",
      r.model, r.weight_type, r.isa, r.weights_memory == "huge pages" ? "in huge pages" : r.weights_memory,
      r.n_threads, r.load_avg, r.roof.bandwidth_bytes_per_s / 1e9,
      r.roof.peak_flops / 1e9, r.roof.source);
  s += fmt::format("{:>5} {:>6} {:>9} {:>8} {:>9} {:>8} {:>7} {:>7} {:>7} {:>8} {:>7} {:>7} "
                   "{:>7} {:>8} {:>6} {:>8} {:>6}\n",
                   "batch", "ctx", "prompt/s", "ttft ms", "decode/s", "per seq", "itl p50",
                   "p90", "p99", "MB/step", "wts MB", "kv rd", "kv wr", "GB/s", "%bw",
                   "GFLOP/s", "%peak");
  for (const BenchPoint& p : r.points) {
    s += fmt::format(
        "{:>5} {:>6} {:>9.1f} {:>8.1f} {:>9.1f} {:>8.1f} {:>7.2f} {:>7.2f} {:>7.2f} {:>8.2f} "
        "{:>7.2f} {:>7.2f} {:>7.3f} {:>8.2f} {:>6} {:>8.2f} {:>6}\n",
        p.batch, p.context, p.prompt_tok_s, p.ttft_ms, p.decode_tok_s, p.decode_tok_s_per_seq,
        p.itl_p50_ms, p.itl_p90_ms, p.itl_p99_ms, p.step.bytes() / 1e6, p.step.weight_bytes / 1e6,
        p.step.kv_read_bytes / 1e6, p.step.kv_write_bytes / 1e6,
        p.verdict.achieved_bytes_per_s / 1e9,
        pct(p.bandwidth_fraction, p.miscount && p.bandwidth_fraction >= 1.0, bw_known),
        p.verdict.achieved_flops_per_s / 1e9,
        pct(p.compute_fraction, p.miscount && p.compute_fraction >= 1.0, fl_known));
  }
  if (!r.paired_loop.empty()) {
    s += fmt::format("paired probe (a read pass of {} after every decode step):\n",
                     r.paired_loop);
    for (const BenchPoint& p : r.points) {
      s += fmt::format("  batch {:>4} ctx {:>6}: {:.2f} GB/s decode against {:.2f} GB/s read: "
                       "{:.0f}% (median of the steps' ratios){}\n",
                       p.batch, p.context, p.verdict.achieved_bytes_per_s / 1e9,
                       p.paired_read_bytes_per_s / 1e9, 100.0 * p.paired_fraction,
                       p.paired_fraction > 1.0 ? "; above 100%: the bytes are over-counted, or "
                                                 "the decode reads in a way the probe's loops lack"
                                               : "");
    }
  }
  if (!r.points.empty() && r.points.front().experts_predicted > 0) {
    s += "experts read per layer and decode step (weights above count the measured ones):\n";
    for (const BenchPoint& p : r.points) {
      s += fmt::format("  batch {:>4} ctx {:>6}: {:.1f} measured (the router's union), {:.1f} "
                       "predicted for uniform routing\n",
                       p.batch, p.context, p.experts_measured, p.experts_predicted);
    }
  }
  s += "verdicts:\n";
  for (const BenchPoint& p : r.points) {
    s += fmt::format("  batch {:>4} ctx {:>6}: {}\n", p.batch, p.context,
                     bw_known ? p.verdict.text : "no roof (run `ridge probe`)");
  }
  if (r.load_avg > r.n_threads) {
    s += fmt::format("note: the load average ({:.1f}) was above the thread count: figures are "
                     "likely low\n", r.load_avg);
  }
  return s;
}

std::string format_bench_csv(const std::vector<BenchReport>& reports) {
  std::string s =
      "model,weight_type,batch,context,prompt_tok_s,ttft_ms,decode_tok_s,decode_tok_s_per_seq,"
      "itl_p50_ms,itl_p90_ms,itl_p99_ms,weight_bytes,kv_read_bytes,kv_write_bytes,"
      "activation_bytes,bytes,flops,achieved_gbs,bandwidth_fraction,achieved_gflops,"
      "compute_fraction,bound,miscount\n";
  for (const BenchReport& r : reports) {
    for (const BenchPoint& p : r.points) {
      const bool bw = r.roof.bandwidth_bytes_per_s > 0 && !(p.miscount && p.bandwidth_fraction >= 1);
      const bool fl = r.roof.peak_flops > 0 && !(p.miscount && p.compute_fraction >= 1);
      s += fmt::format("{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.4f},{:.4f},{:.4f},{:.0f},"
                       "{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.4f},{},{:.4f},{},{},{}\n",
                       r.model, r.weight_type, p.batch, p.context, p.prompt_tok_s, p.ttft_ms,
                       p.decode_tok_s, p.decode_tok_s_per_seq, p.itl_p50_ms, p.itl_p90_ms,
                       p.itl_p99_ms, p.step.weight_bytes, p.step.kv_read_bytes,
                       p.step.kv_write_bytes, p.step.activation_bytes, p.step.bytes(),
                       p.step.flops, p.verdict.achieved_bytes_per_s / 1e9,
                       bw ? fmt::format("{:.4f}", p.bandwidth_fraction) : "",
                       p.verdict.achieved_flops_per_s / 1e9,
                       fl ? fmt::format("{:.4f}", p.compute_fraction) : "",
                       bound_name(p.verdict.bound), p.miscount ? 1 : 0);
    }
  }
  return s;
}

nlohmann::json bench_to_json(const std::vector<BenchReport>& reports,
                             const std::vector<TypeComparison>& comparisons) {
  nlohmann::json j = {{"schema", "ridge.bench/1"}};
  j["results"] = nlohmann::json::array();
  for (const BenchReport& r : reports) {
    const bool bw = r.roof.bandwidth_bytes_per_s > 0;
    const bool fl = r.roof.peak_flops > 0;
    nlohmann::json pts = nlohmann::json::array();
    for (const BenchPoint& p : r.points) {
      pts.push_back({
          {"batch", p.batch}, {"context", p.context}, {"decode_steps", p.n_decode},
          {"prompt_tok_s", p.prompt_tok_s}, {"ttft_ms", p.ttft_ms},
          {"decode_tok_s", p.decode_tok_s}, {"decode_tok_s_per_seq", p.decode_tok_s_per_seq},
          {"itl_ms", {{"p50", p.itl_p50_ms}, {"p90", p.itl_p90_ms}, {"p99", p.itl_p99_ms}}},
          {"step_ms", 1e3 * p.step_s},
          {"step_cost", {{"weight_bytes", p.step.weight_bytes},
                         {"kv_read_bytes", p.step.kv_read_bytes},
                         {"kv_write_bytes", p.step.kv_write_bytes},
                         {"activation_bytes", p.step.activation_bytes},
                         {"state_bytes", p.step.state_bytes},
                         {"bytes", p.step.bytes()}, {"flops", p.step.flops},
                         {"attention_flops", p.step.attention_flops}}},
          {"achieved_bytes_per_s", p.verdict.achieved_bytes_per_s},
          {"achieved_flops_per_s", p.verdict.achieved_flops_per_s},
          {"bandwidth_fraction", fraction_json(p.bandwidth_fraction, p.miscount, bw)},
          {"compute_fraction", fraction_json(p.compute_fraction, p.miscount, fl)},
          {"bound", bound_name(p.verdict.bound)}, {"dominant", p.verdict.dominant},
          {"verdict", p.verdict.text}, {"miscount", p.miscount},
          {"miscount_reason", p.miscount_reason},
          {"experts_per_layer", p.experts_predicted > 0
                                    ? nlohmann::json{{"measured", p.experts_measured},
                                                     {"predicted", p.experts_predicted}}
                                    : nlohmann::json(nullptr)},
          {"paired_probe", r.paired_loop.empty()
                               ? nlohmann::json(nullptr)
                               : nlohmann::json{{"read_bytes_per_s", p.paired_read_bytes_per_s},
                                                {"bandwidth_fraction", p.paired_fraction}}},
      });
    }
    j["results"].push_back({
        {"model", r.model}, {"weight_type", r.weight_type}, {"isa", r.isa},
        {"weights_memory", r.weights_memory}, {"threads", r.n_threads}, {"load_avg", r.load_avg},
        {"weight_read_bytes", r.weight_read_bytes},
        {"paired_probe_loop", r.paired_loop.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.paired_loop)},
        {"roof", {{"bandwidth_bytes_per_s", r.roof.bandwidth_bytes_per_s},
                  {"peak_flops_per_s", r.roof.peak_flops}, {"source", r.roof.source}}},
        {"points", pts},
    });
  }
  nlohmann::json cmp = nlohmann::json::array();
  for (const TypeComparison& c : comparisons) {
    cmp.push_back({{"batch", c.batch}, {"context", c.context}, {"speed_ratio", c.speed_ratio},
                   {"byte_ratio", c.byte_ratio}, {"verdict", c.verdict}});
  }
  j["comparisons"] = cmp;
  return j;
}

std::string format_comparison(const BenchReport& a, const BenchReport& b,
                              const std::vector<TypeComparison>& c) {
  std::string s = fmt::format("{} vs {}: decode speed ratio against byte ratio per step\n",
                              b.weight_type, a.weight_type);
  for (const TypeComparison& t : c) {
    s += fmt::format("  batch {:>4} ctx {:>6}: speed x{:.2f}, bytes x{:.2f} -> {}\n", t.batch,
                     t.context, t.speed_ratio, t.byte_ratio, t.verdict);
  }
  return s;
}

}  // namespace ridge::analysis
