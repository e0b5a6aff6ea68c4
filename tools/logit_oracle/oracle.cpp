// Bit-exact logits oracle: hashes every logit the forward returns, so that two builds of ridge
// (a refactor's before and after) can be compared bit for bit. tools/logit_oracle/run.sh builds
// it against two trees and diffs the output.
//
//   oracle [--isa ref,avx2,avx512] [--kv f32,f16,bf16,q8_0] [--threads 1,2] <models.txt>
//
// models.txt: one GGUF path per line (blank lines and lines starting with '#' are skipped).
// For each model x ISA x KV type x thread count it runs
//   part=session : an engine::Session (n_ctx 64, block 16, max_batch 8, max_outputs 32) eval of a
//                  21-token prompt with all_logits (3 chunks), then 3 single-token decode evals;
//   part=multi   : a direct Model::forward on its own KvCache/Workspace and CPU backend: step 1 =
//                  sequence A's 9-token prompt + sequence B's 5-token prompt (every row returns
//                  logits), step 2 = one decode token each for A and B;
// and prints one line with the number of floats and the 64-bit FNV-1a hash of the raw bytes of
// every logit returned in that part, in return order. Failures print a line, never abort.
// Thread counts: 1 for every ISA, plus 2 for avx512 (filtered by --threads).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "base/thread_pool.h"
#include "engine/session.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/model.h"
#include "model/workspace.h"

namespace {

using KvT = ridge::kv::KvType;
using ridge::ThreadPool;
using ridge::kernels::Isa;
namespace model = ridge::model;
namespace kv = ridge::kv;

struct Hash {
  uint64_t h = 0xcbf29ce484222325ULL;
  int64_t n = 0;
  int64_t nonfinite = 0;
  void add(std::span<const float> v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    const size_t bytes = v.size() * sizeof(float);
    for (size_t i = 0; i < bytes; ++i) {
      h ^= p[i];
      h *= 0x100000001b3ULL;
    }
    for (float f : v) nonfinite += std::isfinite(f) ? 0 : 1;
    n += static_cast<int64_t>(v.size());
  }
};

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    const size_t e = s.find(',', b);
    const std::string item = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
    if (!item.empty()) out.push_back(item);
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

bool wanted(const std::vector<std::string>& filter, const std::string& name) {
  if (filter.empty()) return true;
  for (const auto& f : filter) {
    if (f == name) return true;
  }
  return false;
}

struct KvChoice {
  const char* name;
  KvT type;
};
constexpr KvChoice kKvTypes[] = {{"f32", KvT::kF32},
                                 {"f16", KvT::kF16},
                                 {"bf16", KvT::kBF16},
                                 {"q8_0", KvT::kQ8_0}};
struct IsaChoice {
  const char* name;
  Isa isa;
};
constexpr IsaChoice kIsas[] = {{"ref", Isa::kRef}, {"avx2", Isa::kAvx2}, {"avx512", Isa::kAvx512}};

// One-line error text (newlines flattened).
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// part=session. Returns "" and fills `h`, or an error message.
std::string run_session(const model::Model& m, KvT kv_type, int n_threads, Hash& h) {
  const int64_t n_vocab = m.config().n_vocab;
  ridge::engine::SessionOptions o;
  o.n_ctx = 64;
  o.kv_type = kv_type;
  o.block_size = 16;
  o.max_batch = 8;
  o.max_outputs = 32;
  o.n_threads = n_threads;
  auto s = ridge::engine::Session::create(m, o);
  if (!s.ok()) return "session create: " + s.status().message();
  std::vector<int32_t> prompt;
  for (int64_t i = 0; i < 21; ++i) prompt.push_back(static_cast<int32_t>((17 * i + 3) % n_vocab));
  {
    auto r = s->eval(prompt, /*all_logits=*/true);
    if (!r.ok()) return "prompt eval: " + r.status().message();
    if (static_cast<int64_t>(r->size()) != 21 * n_vocab) return "prompt eval: wrong logits size";
    h.add(*r);
  }
  for (int64_t i = 0; i < 3; ++i) {
    const std::vector<int32_t> tok = {static_cast<int32_t>((17 * (21 + i) + 3) % n_vocab)};
    auto r = s->eval(tok, /*all_logits=*/false);
    if (!r.ok()) return "decode eval " + std::to_string(i) + ": " + r.status().message();
    if (static_cast<int64_t>(r->size()) != n_vocab) return "decode eval: wrong logits size";
    h.add(*r);
  }
  return "";
}

// part=multi: two sequences in one forward (prompts), then one decode token each.
std::string run_multi(const model::Model& m, KvT kv_type, int n_threads, Hash& h) {
  const model::ModelConfig& cfg = m.config();
  const int64_t n_vocab = cfg.n_vocab;
  const int64_t bs = 16;
  const bool recurrent = cfg.n_recurrent_layers() > 0;
  auto kvc = kv::KvCache::create(m.kv_config(8, kv_type, bs, recurrent ? 2 : 1));
  if (!kvc.ok()) return "kv create: " + kvc.status().message();
  model::WorkspaceLimits lim;
  lim.max_tokens = 16;
  lim.max_outputs = 16;
  lim.max_context = 64;
  lim.n_threads = n_threads;
  lim.block_size = bs;
  auto ws = model::Workspace::create(cfg, lim);
  if (!ws.ok()) return "workspace create: " + ws.status().message();
  ThreadPool pool(n_threads);
  ridge::backend::CpuBackend cpu(m.kernels(), pool);
  const std::vector<std::vector<int32_t>> tables = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  std::vector<std::vector<int32_t>> prompts(2);
  for (int64_t i = 0; i < 9; ++i) prompts[0].push_back(static_cast<int32_t>((29 * i + 11) % n_vocab));
  for (int64_t i = 0; i < 5; ++i) prompts[1].push_back(static_cast<int32_t>((41 * i + 7) % n_vocab));
  std::vector<int32_t> n_past = {0, 0};
  model::Batch batch;
  for (int step = 0; step < 2; ++step) {
    batch.clear();
    int64_t expect_rows = 0;
    for (int s = 0; s < 2; ++s) {
      const std::vector<int32_t> toks =
          step == 0 ? prompts[static_cast<size_t>(s)]
                    : std::vector<int32_t>{static_cast<int32_t>((53 * s + 101) % n_vocab)};
      const auto np = n_past[static_cast<size_t>(s)];
      const auto idx = batch.add_seq(tables[static_cast<size_t>(s)],
                                     np + static_cast<int32_t>(toks.size()), recurrent ? s : -1);
      for (size_t j = 0; j < toks.size(); ++j) {
        batch.add_token(toks[j], np + static_cast<int32_t>(j), idx, /*logits=*/true, bs);
      }
      n_past[static_cast<size_t>(s)] += static_cast<int32_t>(toks.size());
      expect_rows += static_cast<int64_t>(toks.size());
    }
    auto r = m.forward(batch, *kvc, *ws, cpu);
    if (!r.ok()) return "forward step " + std::to_string(step) + ": " + r.status().message();
    if (static_cast<int64_t>(r->size()) != expect_rows * n_vocab) {
      return "forward step " + std::to_string(step) + ": wrong logits size";
    }
    h.add(*r);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> isa_filter, kv_filter, thread_filter;
  std::string list;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--isa") {
      isa_filter = split(next());
    } else if (a == "--kv") {
      kv_filter = split(next());
    } else if (a == "--threads") {
      thread_filter = split(next());
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: oracle [--isa ref,avx2,avx512] [--kv f32,f16,bf16,q8_0] [--threads 1,2] models.txt\n");
      return 0;
    } else {
      list = a;
    }
  }
  if (list.empty()) {
    std::fprintf(stderr, "usage: oracle [--isa ...] [--kv ...] [--threads ...] models.txt\n");
    return 2;
  }
  std::ifstream in(list);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", list.c_str());
    return 2;
  }
  std::vector<std::string> paths;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    paths.push_back(line);
  }
  const auto t_all = std::chrono::steady_clock::now();
  for (const auto& path : paths) {
    const std::string name = base_name(path);
    for (const auto& ic : kIsas) {
      if (!wanted(isa_filter, ic.name)) continue;
      if (!ridge::kernels::isa_supported(ic.isa)) {
        std::printf("%s isa=%s ERROR isa not supported on this CPU\n", name.c_str(), ic.name);
        continue;
      }
      const auto t0 = std::chrono::steady_clock::now();
      auto m = model::Model::load(path, ridge::kernels::kernels_for(ic.isa));
      if (!m.ok()) {
        std::printf("%s isa=%s ERROR load: %s\n", name.c_str(), ic.name,
                    one_line(m.status().message()).c_str());
        std::fflush(stdout);
        continue;
      }
      const model::ModelConfig& cfg = m->config();
      for (const auto& kc : kKvTypes) {
        if (!wanted(kv_filter, kc.name)) continue;
        if (kc.type == KvT::kQ8_0 && cfg.head_dim % 32 != 0) {
          std::printf("%s isa=%s kv=%s SKIP head_dim %lld is not a multiple of 32\n", name.c_str(),
                      ic.name, kc.name, static_cast<long long>(cfg.head_dim));
          continue;
        }
        for (int nt : {1, 2}) {
          if (nt == 2 && ic.isa != Isa::kAvx512) continue;
          if (!wanted(thread_filter, std::to_string(nt))) continue;
          for (const char* part : {"session", "multi"}) {
            Hash h;
            const std::string err = std::strcmp(part, "session") == 0
                                        ? run_session(*m, kc.type, nt, h)
                                        : run_multi(*m, kc.type, nt, h);
            if (!err.empty()) {
              std::printf("%s isa=%s kv=%s threads=%d part=%s ERROR %s\n", name.c_str(), ic.name,
                          kc.name, nt, part, one_line(err).c_str());
            } else {
              std::printf("%s isa=%s kv=%s threads=%d part=%s floats=%lld nonfinite=%lld fnv1a=%016llx\n",
                          name.c_str(), ic.name, kc.name, nt, part, static_cast<long long>(h.n),
                          static_cast<long long>(h.nonfinite), static_cast<unsigned long long>(h.h));
            }
            std::fflush(stdout);
          }
        }
      }
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "[oracle] %s isa=%s %.1fs\n", name.c_str(), ic.name, secs);
    }
  }
  std::fprintf(stderr, "[oracle] total %.1fs\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count());
  return 0;
}
