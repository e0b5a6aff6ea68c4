// Tokenizer speed: Qwen2 (byte-level BPE) encoding of English and Chinese text, MB/s on one
// core, and llama.cpp's tokenizer on the same texts in the same run (tools/tokenizer_peer_bench.mjs
// through the peer; its timing excludes node and model start-up).
//   bench_tokenizer [google-benchmark flags]   (needs ../shared/vocab/ggml-vocab-qwen2.gguf)
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace {

using ridge::tokenizer::Tokenizer;

// The repository root, from this file's path (benchmarks get no RIDGE_SOURCE_DIR definition);
// the shared data folder sits beside it unless $RIDGE_SHARED_DIR says otherwise.
const std::filesystem::path kSourceDir = std::filesystem::path(__FILE__).parent_path().parent_path();
const std::string kVocab =
    (std::getenv("RIDGE_SHARED_DIR") ? std::filesystem::path(std::getenv("RIDGE_SHARED_DIR"))
                                     : kSourceDir.parent_path() / "shared") / "vocab/ggml-vocab-qwen2.gguf";
constexpr size_t kTextBytes = 1 << 20;

// Zipf-distributed draws from a word list: realistic repetition without a corpus download.
std::string zipf_text(const std::vector<std::string>& words, const std::vector<std::string>& seps,
                      size_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> w(words.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = 1.0 / static_cast<double>(i + 1);
  std::discrete_distribution<size_t> word(w.begin(), w.end());
  std::uniform_int_distribution<size_t> sep(0, seps.size() - 1);
  std::string s;
  while (s.size() < bytes) {
    s += words[word(rng)];
    s += seps[sep(rng)];
  }
  return s;
}

std::string english_text() {
  const std::vector<std::string> words = {
      "the", "of", "and", "to", "a", "in", "is", "it", "you", "that", "he", "was", "for", "on", "are",
      "with", "as", "I", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had", "by",
      "word", "but", "what", "some", "we", "can", "out", "other", "were", "all", "there", "when", "up",
      "use", "your", "how", "said", "an", "each", "she", "which", "do", "their", "time", "if", "will",
      "way", "about", "many", "then", "them", "write", "would", "like", "so", "these", "her", "long",
      "make", "thing", "see", "him", "two", "has", "look", "more", "day", "could", "go", "come", "did",
      "number", "sound", "no", "most", "people", "my", "over", "know", "water", "than", "call", "first",
      "who", "may", "down", "side", "been", "now", "find", "don't", "it's", "Tokenization", "bandwidth",
      "memory", "inference", "2024", "3.5", "engine", "model's", "throughput", "latency", "GPU", "CPU"};
  return zipf_text(words, {" ", " ", " ", " ", " ", ", ", ". ", ".\n", "\n\n", "; "}, kTextBytes, 1);
}

std::string chinese_text() {
  const std::vector<std::string> words = {
      "的", "一", "是", "在", "不", "了", "有", "和", "人", "这", "中", "大", "为", "上", "个", "国",
      "我", "以", "要", "他", "时", "来", "用", "们", "生", "到", "作", "地", "于", "出", "就", "分",
      "对", "成", "会", "可", "主", "发", "年", "动", "同", "工", "也", "能", "下", "过", "子", "说",
      "产", "种", "面", "而", "方", "后", "多", "定", "行", "学", "法", "所", "民", "得", "经", "十",
      "三", "之", "进", "着", "等", "部", "度", "家", "电", "力", "里", "如", "水", "化", "高", "自",
      "二", "理", "起", "小", "物", "现", "实", "加", "量", "都", "两", "体", "制", "机", "当", "使",
      "模型", "推理", "内存", "带宽", "计算", "语言", "中国", "我们", "今天", "时间"};
  return zipf_text(words, {"", "", "", "", "", "", "，", "。", "、", "\n"}, kTextBytes, 2);
}

std::optional<Tokenizer>& qwen() {
  static std::optional<Tokenizer> tok = [] () -> std::optional<Tokenizer> {
    auto f = ridge::gguf::File::open(kVocab);
    if (!f.ok()) return std::nullopt;
    auto t = Tokenizer::from_gguf(*f);
    if (!t.ok()) return std::nullopt;
    return std::move(t).value();
  }();
  return tok;
}

void encode_bench(benchmark::State& state, const std::string& text) {
  if (!qwen()) {
    state.SkipWithError(("cannot load " + kVocab).c_str());
    return;
  }
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = qwen()->encode(text, false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}

void BM_Qwen2EncodeEnglish(benchmark::State& state) { encode_bench(state, english_text()); }
void BM_Qwen2EncodeChinese(benchmark::State& state) { encode_bench(state, chinese_text()); }
BENCHMARK(BM_Qwen2EncodeEnglish)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_Qwen2EncodeChinese)->Unit(benchmark::kMillisecond)->MinTime(1.0);

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Speed {
  double wall_mb_s = 0, cpu_mb_s = 0;
};

// Median MB/s of ridge on `text` over 5 runs, by wall clock and by this thread's CPU time.
Speed ridge_speed(const std::string& text, size_t* n_tokens) {
  std::vector<double> wall, cpu;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_s();
    *n_tokens = qwen()->encode(text, false, false).size();
    cpu.push_back(thread_cpu_s() - c0);
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  const double mb = static_cast<double>(text.size()) / 1e6;
  return {mb / wall[2], mb / cpu[2]};
}

double json_number(const std::string& out, const std::string& key) {
  const auto k = out.find("\"" + key + "\":");
  return k == std::string::npos ? 0.0 : std::stod(out.substr(k + key.size() + 3));
}

void compare_with_peer() {
  if (!qwen()) return;
  const std::string script = (kSourceDir / "tools/tokenizer_peer_bench.mjs").string();
  fmt::print("\nqwen2 encode of 1 MiB, one core, median of 5; llama.cpp = node-llama-cpp prebuilt, tokenize call only\n");
  fmt::print("{:<9} {:>13} {:>13} {:>15} {:>15} {:>17} {:>7}\n", "text", "ridge MB/s", "ridge cpuMB/s",
             "llama.cpp MB/s", "llama cpuMB/s", "tokens ridge/llama", "cpu x");
  for (const auto& [name, text] : {std::pair{"english", english_text()}, std::pair{"chinese", chinese_text()}}) {
    size_t n_ridge = 0;
    const Speed ours = ridge_speed(text, &n_ridge);
    const auto path = std::filesystem::temp_directory_path() / fmt::format("ridge_tok_bench_{}.txt", name);
    std::ofstream(path, std::ios::binary) << text;
    const std::string cmd = fmt::format("node '{}' '{}' '{}' 5 2>/dev/null", script, kVocab, path.string());
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[512];
      while (fgets(buf, sizeof buf, p)) out += buf;
      pclose(p);
    }
    std::filesystem::remove(path);
    const double peer_wall = json_number(out, "mb_s"), peer_cpu = json_number(out, "cpu_mb_s");
    const auto n_peer = static_cast<size_t>(json_number(out, "tokens"));
    if (peer_cpu > 0) {
      fmt::print("{:<9} {:>13.2f} {:>13.2f} {:>15.2f} {:>15.2f} {:>8}/{:<8} {:>6.2f}x\n", name, ours.wall_mb_s,
                 ours.cpu_mb_s, peer_wall, peer_cpu, n_ridge, n_peer, ours.cpu_mb_s / peer_cpu);
    } else {
      fmt::print("{:<9} {:>13.2f} {:>13.2f}   (peer not available: {})\n", name, ours.wall_mb_s, ours.cpu_mb_s, script);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  compare_with_peer();
  return 0;
}
