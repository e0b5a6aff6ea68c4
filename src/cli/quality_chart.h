// ridge quality's results: one row per file, the Pareto frontier of KL divergence against bytes
// per token, the table and the SVG chart.
#pragma once

#include <string>
#include <vector>

namespace ridge::cli {

struct QualityRow {
  std::string label;          // "f16", "q4_k_m", ...
  bool base = false;          // the model the others are measured against
  double file_bytes = 0;
  double bits_per_weight = 0;  // of the converted tensors
  int64_t n_fallback = 0;      // tensors whose rows the type could not hold (another type written)
  double bytes_per_token = 0; // one decode step at the measured context (cost model)
  double ppl = 0;
  double kld = 0;             // mean KL divergence from the base
  double kld_99 = 0;
  double same_top = 0;        // 0..1
  double rms_dp = 0;          // 0..1
  double measured_tok_s = 0;  // decode here
  std::vector<double> projected_tok_s;  // decode per --hw machine (roofline)
  bool frontier = false;
};

// Marks the rows no other row beats on both bytes per token and KLD (ties: fewer bytes wins).
void mark_frontier(std::vector<QualityRow>& rows);
std::string format_quality_table(const std::vector<QualityRow>& rows, const std::vector<std::string>& hw_names,
                                 int64_t n_scored, const std::string& text_name);
// KLD (log scale) against bytes per token, the frontier joined.
std::string quality_svg(const std::vector<QualityRow>& rows, const std::string& title);

}  // namespace ridge::cli
