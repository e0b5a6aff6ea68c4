// The expected per-tensor types of tests/offline/quant_mix_llama_test.cpp: llama.cpp's own, for
// the i-quant and ternary mixtures (iq1_s ... iq3_m, tq1_0, tq2_0) and, where an importance
// matrix changes llama.cpp's rules, q4_0, q5_0, iq4_nl and iq4_xs.
//
// Made by llama.cpp, not from ridge's rules: llama.cpp at commit 80fb11a (`git describe` of the
// checkout; llama-quantize prints "version: 0.4.0-dev (build 1, commit 80fb11a)"), running
// `llama-quantize --dry-run [--imatrix imatrix.gguf] MODEL-f16.gguf TYPE` on the f16 files that
// `ridge synth --preset P [--layers N] --type f16` writes for kOracleShapes (any imatrix file turns
// llama.cpp's has_imatrix on: `ridge imatrix` of tiny-llama was used). A tensor's type is the
// dry run's "(type)"; where the row length forced a fallback, its "required for type X" warning
// gives the rule's choice, written "rule>written" below.
//
// A case's `types`: "stem=spec ..." where stem is the name without "blk.N." and ".weight"
// (token_embd, output, attn_v, ffn_down_exps, ...) and "*" every stem not listed; spec is one
// type for every layer or "first-last:type,..." runs. `imatrix`: the dry run with one (kWith),
// without (kWithout) or either (kEither: the same types). `needs_imatrix`: llama-quantize's
// "will require an imatrix" without one. `converted`: how many tensors it converts.
//
// Shapes: n_gqa 2, tied (Qwen3-0.6B); n_gqa 4, tied (Llama-3.2-1B); n_gqa 7 with 896-wide rows
// that fall back (Qwen2.5-0.5B); an own output head, n_gqa 1 (Llama-2-7B cut to 8 layers); 4
// experts with a shared expert (two ffn_down a layer: the counter is not the layer) and 8
// experts (Mixtral's rules); an 80-layer llama (the 70B rule). The last three are 64 wide, so
// everything falls back.
#pragma once

#include <cstdint>

namespace ridge::offline::llama_oracle {

enum OracleImatrix { kWithout, kWith, kEither };

struct OracleCase {
  const char* shape;  // a name of kOracleShapes
  const char* mix;
  OracleImatrix imatrix;
  bool needs_imatrix;
  int converted;
  const char* types;
};

// The f16 files: `ridge synth --preset PRESET [--layers LAYERS] --type f16`.
struct OracleShape {
  const char* name;
  const char* preset;
  int64_t layers;  // 0: the preset's
};
constexpr OracleShape kOracleShapes[] = {
    {"qwen3-0.6b", "qwen3-0.6b", 0},           {"llama-3.2-1b", "llama-3.2-1b", 0},
    {"qwen2.5-0.5b", "qwen2.5-0.5b", 0},       {"llama-2-7b-8", "llama-2-7b", 8},
    {"tiny-qwen2moe-16", "tiny-qwen2moe", 16}, {"tiny-qwen3moe-16", "tiny-qwen3moe", 16},
    {"tiny-llama-80", "tiny-llama", 80},
};

// clang-format off
constexpr OracleCase kOracleCases[] = {
    // qwen3-0.6b
    {"qwen3-0.6b", "iq1_s", kEither, true, 197,
     "token_embd=q5_K attn_output=iq2_xxs attn_v=q2_K ffn_down=0-2:q2_K,3-27:iq1_s *=iq1_s"},
    {"qwen3-0.6b", "iq1_m", kEither, true, 197,
     "token_embd=q5_K attn_output=iq2_xxs attn_v=q2_K ffn_down=0-2:q2_K,3-27:iq1_m *=iq1_m"},
    {"qwen3-0.6b", "iq2_xxs", kEither, true, 197,
     "token_embd=q5_K attn_v=q2_K ffn_down=0-2:q2_K,3-27:iq2_xxs *=iq2_xxs"},
    {"qwen3-0.6b", "iq2_xs", kEither, true, 197,
     "token_embd=q5_K attn_v=q2_K ffn_down=0-2:q2_K,3-27:iq2_xs *=iq2_xs"},
    {"qwen3-0.6b", "iq2_s", kEither, true, 197,
     "token_embd=q5_K attn_output=iq3_s attn_v=iq3_s ffn_down=0-2:iq3_s,3-27:iq2_xs *=iq2_xs"},
    {"qwen3-0.6b", "iq2_m", kEither, true, 197,
     "token_embd=q5_K attn_output=iq3_s attn_v=iq3_s ffn_down=0-2:iq3_s,3-27:iq2_s *=iq2_s"},
    {"qwen3-0.6b", "iq3_xxs", kWithout, true, 197,
     "token_embd=q5_K attn_output=iq3_s attn_v=iq3_s ffn_down=0-2:q4_K,3-27:q3_K "
     "ffn_gate=iq3_xxs ffn_up=iq3_xxs *=iq2_s"},
    {"qwen3-0.6b", "iq3_xxs", kWith, true, 197,
     "token_embd=q5_K attn_k=iq2_s attn_output=iq3_s attn_q=iq2_s *=iq3_xxs"},
    {"qwen3-0.6b", "iq3_xs", kEither, true, 197,
     "token_embd=q6_K attn_k=iq3_xxs attn_q=iq3_xxs "
     "ffn_gate=0-2:iq3_s,3-23:iq3_xxs,24-27:iq3_s ffn_up=0-2:iq3_s,3-23:iq3_xxs,24-27:iq3_s "
     "*=iq3_s"},
    {"qwen3-0.6b", "iq3_s", kEither, false, 197, "token_embd=q6_K *=iq3_s"},
    {"qwen3-0.6b", "iq3_m", kEither, false, 197,
     "token_embd=q6_K attn_output=q4_K attn_v=q4_K ffn_down=0-2:q4_K,3-27:iq3_s *=iq3_s"},
    {"qwen3-0.6b", "tq1_0", kEither, false, 197, "token_embd=q6_K *=tq1_0"},
    {"qwen3-0.6b", "tq2_0", kEither, false, 197, "token_embd=q6_K *=tq2_0"},
    {"qwen3-0.6b", "q4_0", kWithout, false, 197, "token_embd=q6_K *=q4_0"},
    {"qwen3-0.6b", "q4_0", kWith, false, 197, "token_embd=q6_K ffn_down=0-2:q4_1,3-27:q4_0 *=q4_0"},
    {"qwen3-0.6b", "q5_0", kWithout, false, 197, "token_embd=q6_K *=q5_0"},
    {"qwen3-0.6b", "q5_0", kWith, false, 197, "token_embd=q6_K ffn_down=0-2:q5_1,3-27:q5_0 *=q5_0"},
    // llama-3.2-1b
    {"llama-3.2-1b", "iq1_s", kEither, true, 113,
     "token_embd=q5_K attn_output=iq2_xxs attn_v=q4_K ffn_down=0-1:q2_K,2-15:iq1_s *=iq1_s"},
    {"llama-3.2-1b", "iq1_m", kEither, true, 113,
     "token_embd=q5_K attn_output=iq2_xxs attn_v=q4_K ffn_down=0-1:q2_K,2-15:iq1_m *=iq1_m"},
    {"llama-3.2-1b", "iq2_xxs", kEither, true, 113,
     "token_embd=q5_K attn_v=q4_K ffn_down=0-1:q2_K,2-15:iq2_xxs *=iq2_xxs"},
    {"llama-3.2-1b", "iq2_xs", kEither, true, 113,
     "token_embd=q5_K attn_v=q4_K ffn_down=0-1:q2_K,2-15:iq2_xs *=iq2_xs"},
    {"llama-3.2-1b", "iq2_s", kEither, true, 113,
     "token_embd=q5_K attn_output=iq3_s attn_v=q4_K ffn_down=0-1:iq3_s,2-15:iq2_xs *=iq2_xs"},
    {"llama-3.2-1b", "iq2_m", kEither, true, 113,
     "token_embd=q5_K attn_output=iq3_s attn_v=q4_K ffn_down=0-1:iq3_s,2-15:iq2_s *=iq2_s"},
    {"llama-3.2-1b", "iq3_xxs", kWithout, true, 113,
     "token_embd=q5_K attn_output=iq3_s attn_v=q4_K ffn_down=0-1:q4_K,2-15:q3_K "
     "ffn_gate=iq3_xxs ffn_up=iq3_xxs *=iq2_s"},
    {"llama-3.2-1b", "iq3_xxs", kWith, true, 113,
     "token_embd=q5_K attn_k=iq2_s attn_output=iq3_s attn_q=iq2_s attn_v=q4_K *=iq3_xxs"},
    {"llama-3.2-1b", "iq3_xs", kEither, true, 113,
     "token_embd=q6_K attn_output=iq3_s attn_v=q4_K ffn_down=iq3_s "
     "ffn_gate=0-1:iq3_s,2-13:iq3_xxs,14-15:iq3_s ffn_up=0-1:iq3_s,2-13:iq3_xxs,14-15:iq3_s "
     "*=iq3_xxs"},
    {"llama-3.2-1b", "iq3_s", kEither, false, 113, "token_embd=q6_K attn_v=q4_K *=iq3_s"},
    {"llama-3.2-1b", "iq3_m", kEither, false, 113,
     "token_embd=q6_K attn_output=q4_K attn_v=q4_K ffn_down=0-1:q4_K,2-15:iq3_s *=iq3_s"},
    {"llama-3.2-1b", "tq1_0", kEither, false, 113, "token_embd=q6_K *=tq1_0"},
    {"llama-3.2-1b", "tq2_0", kEither, false, 113, "token_embd=q6_K *=tq2_0"},
    {"llama-3.2-1b", "iq4_nl", kWithout, false, 113,
     "token_embd=q6_K attn_v=q5_K ffn_down=0-1:q5_K,2-15:iq4_nl *=iq4_nl"},
    {"llama-3.2-1b", "iq4_nl", kWith, false, 113, "token_embd=q6_K attn_v=q5_K *=iq4_nl"},
    {"llama-3.2-1b", "iq4_xs", kWithout, false, 113,
     "token_embd=q6_K attn_v=q5_K ffn_down=0-1:q5_K,2-15:iq4_xs *=iq4_xs"},
    {"llama-3.2-1b", "iq4_xs", kWith, false, 113, "token_embd=q6_K attn_v=q5_K *=iq4_xs"},
    // qwen2.5-0.5b
    {"qwen2.5-0.5b", "iq1_s", kEither, true, 169,
     "token_embd=q8_0 attn_output=iq2_xxs>iq4_nl attn_v=q4_K>q5_0 "
     "ffn_down=0-2:q2_K,3-23:iq1_s *=iq1_s>iq4_nl"},
    {"qwen2.5-0.5b", "iq1_m", kEither, true, 169,
     "token_embd=q8_0 attn_output=iq2_xxs>iq4_nl attn_v=q4_K>q5_0 "
     "ffn_down=0-2:q2_K,3-23:iq1_m *=iq1_m>iq4_nl"},
    {"qwen2.5-0.5b", "iq2_xxs", kEither, true, 169,
     "token_embd=q8_0 attn_v=q4_K>q5_0 ffn_down=0-2:q2_K,3-23:iq2_xxs *=iq2_xxs>iq4_nl"},
    {"qwen2.5-0.5b", "iq2_xs", kEither, true, 169,
     "token_embd=q8_0 attn_v=q4_K>q5_0 ffn_down=0-2:q2_K,3-23:iq2_xs *=iq2_xs>iq4_nl"},
    {"qwen2.5-0.5b", "iq2_s", kEither, true, 169,
     "token_embd=q8_0 attn_output=iq3_s>iq4_nl attn_v=q4_K>q5_0 "
     "ffn_down=0-2:iq3_s,3-23:iq2_xs *=iq2_xs>iq4_nl"},
    {"qwen2.5-0.5b", "iq2_m", kEither, true, 169,
     "token_embd=q8_0 attn_output=iq3_s>iq4_nl attn_v=q4_K>q5_0 "
     "ffn_down=0-2:iq3_s,3-23:iq2_s *=iq2_s>iq4_nl"},
    {"qwen2.5-0.5b", "iq3_xxs", kWithout, false, 169,
     "token_embd=q8_0 attn_output=iq3_s>iq4_nl attn_v=q4_K>q5_0 ffn_down=0-2:q4_K,3-23:q3_K "
     "ffn_gate=iq3_xxs>iq4_nl ffn_up=iq3_xxs>iq4_nl *=iq2_s>iq4_nl"},
    {"qwen2.5-0.5b", "iq3_xxs", kWith, false, 169,
     "token_embd=q8_0 attn_output=iq3_s>iq4_nl attn_v=q4_K>q5_0 ffn_down=iq3_xxs "
     "ffn_gate=iq3_xxs>iq4_nl ffn_up=iq3_xxs>iq4_nl *=iq2_s>iq4_nl"},
    {"qwen2.5-0.5b", "iq3_xs", kEither, false, 169,
     "token_embd=q8_0 attn_output=iq3_s>iq4_nl attn_v=q4_K>q5_0 ffn_down=iq3_s "
     "ffn_gate=0-2:iq3_s>iq4_nl,3-20:iq3_xxs>iq4_nl,21-23:iq3_s>iq4_nl "
     "ffn_up=0-2:iq3_s>iq4_nl,3-20:iq3_xxs>iq4_nl,21-23:iq3_s>iq4_nl *=iq3_xxs>iq4_nl"},
    {"qwen2.5-0.5b", "iq3_s", kEither, false, 169,
     "token_embd=q8_0 attn_v=q4_K>q5_0 ffn_down=iq3_s *=iq3_s>iq4_nl"},
    {"qwen2.5-0.5b", "iq3_m", kEither, false, 169,
     "token_embd=q8_0 attn_output=q4_K>q5_0 attn_v=q4_K>q5_0 ffn_down=0-2:q4_K,3-23:iq3_s "
     "*=iq3_s>iq4_nl"},
    {"qwen2.5-0.5b", "tq1_0", kEither, false, 169, "token_embd=q8_0 ffn_down=tq1_0 *=tq1_0>q4_0"},
    {"qwen2.5-0.5b", "tq2_0", kEither, false, 169, "token_embd=q8_0 ffn_down=tq2_0 *=tq2_0>q4_0"},
    {"qwen2.5-0.5b", "iq4_nl", kWithout, false, 169,
     "token_embd=q6_K>q8_0 attn_v=q5_K>q5_1 ffn_down=0-2:q5_K,3-23:iq4_nl *=iq4_nl"},
    {"qwen2.5-0.5b", "iq4_nl", kWith, false, 169, "token_embd=q6_K>q8_0 attn_v=q5_K>q5_1 *=iq4_nl"},
    {"qwen2.5-0.5b", "iq4_xs", kWithout, false, 169,
     "token_embd=q8_0 attn_v=q5_K>q5_1 ffn_down=0-2:q5_K,3-23:iq4_xs *=iq4_xs>iq4_nl"},
    {"qwen2.5-0.5b", "iq4_xs", kWith, false, 169,
     "token_embd=q8_0 attn_v=q5_K>q5_1 ffn_down=iq4_xs *=iq4_xs>iq4_nl"},
    // llama-2-7b-8
    {"llama-2-7b-8", "iq1_s", kEither, true, 58,
     "output=q5_K token_embd=q2_K attn_output=iq2_xxs attn_v=q2_K ffn_down=0:q2_K,1-7:iq1_s "
     "*=iq1_s"},
    {"llama-2-7b-8", "iq1_m", kEither, true, 58,
     "output=q5_K token_embd=q2_K attn_output=iq2_xxs attn_v=q2_K ffn_down=0:q2_K,1-7:iq1_m "
     "*=iq1_m"},
    {"llama-2-7b-8", "iq2_xxs", kEither, true, 58,
     "output=q5_K token_embd=q2_K attn_v=q2_K ffn_down=0:q2_K,1-7:iq2_xxs *=iq2_xxs"},
    {"llama-2-7b-8", "iq2_xs", kEither, true, 58,
     "output=q5_K token_embd=q2_K attn_v=q2_K ffn_down=0:q2_K,1-7:iq2_xs *=iq2_xs"},
    {"llama-2-7b-8", "iq2_s", kEither, true, 58,
     "output=q5_K token_embd=iq3_s attn_output=iq3_s attn_v=iq3_s "
     "ffn_down=0:iq3_s,1-7:iq2_xs *=iq2_xs"},
    {"llama-2-7b-8", "iq2_m", kEither, true, 58,
     "output=q5_K token_embd=iq3_s attn_output=iq3_s attn_v=iq3_s ffn_down=0:iq3_s,1-7:iq2_s "
     "*=iq2_s"},
    {"llama-2-7b-8", "iq3_xxs", kWithout, true, 58,
     "output=q5_K attn_k=iq2_s attn_q=iq2_s ffn_down=0:q4_K,1-7:q3_K ffn_gate=iq3_xxs "
     "ffn_up=iq3_xxs *=iq3_s"},
    {"llama-2-7b-8", "iq3_xxs", kWith, true, 58,
     "output=q5_K token_embd=iq3_s attn_k=iq2_s attn_output=iq3_s attn_q=iq2_s *=iq3_xxs"},
    {"llama-2-7b-8", "iq3_xs", kEither, true, 58,
     "output=q6_K attn_k=iq3_xxs attn_q=iq3_xxs ffn_gate=0:iq3_s,1-6:iq3_xxs,7:iq3_s "
     "ffn_up=0:iq3_s,1-6:iq3_xxs,7:iq3_s *=iq3_s"},
    {"llama-2-7b-8", "iq3_s", kEither, false, 58, "output=q6_K *=iq3_s"},
    {"llama-2-7b-8", "iq3_m", kEither, false, 58,
     "output=q6_K attn_output=q4_K attn_v=q4_K ffn_down=0:q4_K,1-7:iq3_s *=iq3_s"},
    {"llama-2-7b-8", "tq1_0", kEither, false, 58, "output=q6_K token_embd=q4_K *=tq1_0"},
    {"llama-2-7b-8", "tq2_0", kEither, false, 58, "output=q6_K token_embd=q4_K *=tq2_0"},
    // tiny-qwen2moe-16
    {"tiny-qwen2moe-16", "iq1_s", kEither, false, 162,
     "output=q8_0 token_embd=q2_K>q4_0 attn_output=iq2_xxs>iq4_nl attn_v=q4_K>q5_0 "
     "ffn_down_exps=0:q2_K>q4_0,1-15:iq1_s>iq4_nl "
     "ffn_down_shexp=0:q2_K>q4_0,1-15:iq1_s>iq4_nl *=iq1_s>iq4_nl"},
    {"tiny-qwen2moe-16", "iq1_m", kEither, false, 162,
     "output=q8_0 token_embd=q2_K>q4_0 attn_output=iq2_xxs>iq4_nl attn_v=q4_K>q5_0 "
     "ffn_down_exps=0:q2_K>q4_0,1-15:iq1_m>iq4_nl "
     "ffn_down_shexp=0:q2_K>q4_0,1-15:iq1_m>iq4_nl *=iq1_m>iq4_nl"},
    {"tiny-qwen2moe-16", "iq2_xxs", kEither, false, 162,
     "output=q8_0 token_embd=q2_K>q4_0 attn_v=q4_K>q5_0 "
     "ffn_down_exps=0:q2_K>q4_0,1-15:iq2_xxs>iq4_nl "
     "ffn_down_shexp=0:q2_K>q4_0,1-15:iq2_xxs>iq4_nl *=iq2_xxs>iq4_nl"},
    {"tiny-qwen2moe-16", "iq2_xs", kEither, false, 162,
     "output=q8_0 token_embd=q2_K>q4_0 attn_v=q4_K>q5_0 "
     "ffn_down_exps=0:q2_K>q4_0,1-15:iq2_xs>iq4_nl "
     "ffn_down_shexp=0:q2_K>q4_0,1-15:iq2_xs>iq4_nl *=iq2_xs>iq4_nl"},
    {"tiny-qwen2moe-16", "iq2_s", kEither, false, 162,
     "output=q8_0 token_embd=iq3_s>iq4_nl attn_output=iq3_s>iq4_nl attn_v=q4_K>q5_0 "
     "ffn_down_exps=0:iq3_s>iq4_nl,1-15:iq2_xs>iq4_nl "
     "ffn_down_shexp=0:iq3_s>iq4_nl,1-15:iq2_xs>iq4_nl *=iq2_xs>iq4_nl"},
    {"tiny-qwen2moe-16", "iq2_m", kEither, false, 162,
     "output=q8_0 token_embd=iq3_s>iq4_nl attn_output=iq3_s>iq4_nl attn_v=q4_K>q5_0 "
     "ffn_down_exps=0:iq3_s>iq4_nl,1-15:iq2_s>iq4_nl "
     "ffn_down_shexp=0:iq3_s>iq4_nl,1-15:iq2_s>iq4_nl *=iq2_s>iq4_nl"},
    {"tiny-qwen2moe-16", "iq3_xxs", kWithout, false, 162,
     "output=q8_0 token_embd=iq3_s>iq4_nl attn_k=iq2_s>iq4_nl attn_output=iq3_s>iq4_nl "
     "attn_q=iq2_s>iq4_nl attn_v=iq3_s>iq4_nl ffn_down_exps=0-1:q4_K>q5_0,2-15:q3_K>q4_0 "
     "ffn_down_shexp=0-1:q4_K>q5_0,2-15:q3_K>q4_0 *=iq3_xxs>iq4_nl"},
    {"tiny-qwen2moe-16", "iq3_xxs", kWith, false, 162,
     "output=q8_0 token_embd=iq3_s>iq4_nl attn_k=iq2_s>iq4_nl attn_output=iq3_s>iq4_nl "
     "attn_q=iq2_s>iq4_nl *=iq3_xxs>iq4_nl"},
    {"tiny-qwen2moe-16", "iq3_xs", kEither, false, 162,
     "output=q8_0 attn_k=iq3_xxs>iq4_nl attn_q=iq3_xxs>iq4_nl "
     "ffn_gate_exps=0-1:iq3_s>iq4_nl,2-13:iq3_xxs>iq4_nl,14-15:iq3_s>iq4_nl "
     "ffn_gate_shexp=0-1:iq3_s>iq4_nl,2-13:iq3_xxs>iq4_nl,14-15:iq3_s>iq4_nl "
     "ffn_up_exps=0-1:iq3_s>iq4_nl,2-13:iq3_xxs>iq4_nl,14-15:iq3_s>iq4_nl "
     "ffn_up_shexp=0-1:iq3_s>iq4_nl,2-13:iq3_xxs>iq4_nl,14-15:iq3_s>iq4_nl *=iq3_s>iq4_nl"},
    {"tiny-qwen2moe-16", "iq3_s", kEither, false, 162, "output=q8_0 *=iq3_s>iq4_nl"},
    {"tiny-qwen2moe-16", "iq3_m", kEither, false, 162,
     "output=q8_0 attn_output=q4_K>q5_0 attn_v=q4_K>q5_0 "
     "ffn_down_exps=0-1:q4_K>q5_0,2-15:iq3_s>iq4_nl "
     "ffn_down_shexp=0-1:q4_K>q5_0,2-15:iq3_s>iq4_nl *=iq3_s>iq4_nl"},
    {"tiny-qwen2moe-16", "tq1_0", kEither, false, 162,
     "output=q8_0 token_embd=q4_K>q5_0 *=tq1_0>q4_0"},
    {"tiny-qwen2moe-16", "tq2_0", kEither, false, 162,
     "output=q8_0 token_embd=q4_K>q5_0 *=tq2_0>q4_0"},
    {"tiny-qwen2moe-16", "q4_0", kWithout, false, 162, "output=q6_K>q8_0 *=q4_0"},
    {"tiny-qwen2moe-16", "q4_0", kWith, false, 162,
     "output=q6_K>q8_0 ffn_down_exps=0-1:q4_1,2-15:q4_0 ffn_down_shexp=0-1:q4_1,2-15:q4_0 "
     "*=q4_0"},
    {"tiny-qwen2moe-16", "q5_0", kWithout, false, 162, "output=q6_K>q8_0 *=q5_0"},
    {"tiny-qwen2moe-16", "q5_0", kWith, false, 162,
     "output=q6_K>q8_0 ffn_down_exps=0-1:q5_1,2-15:q5_0 ffn_down_shexp=0-1:q5_1,2-15:q5_0 "
     "*=q5_0"},
    // tiny-qwen3moe-16
    {"tiny-qwen3moe-16", "iq1_s", kEither, false, 113,
     "token_embd=q8_0 attn_k=q4_K>q5_0 attn_output=q5_K>q5_1 attn_v=q4_K>q5_0 "
     "ffn_down_exps=0-1:q2_K>q4_0,2-15:iq1_s>iq4_nl *=iq1_s>iq4_nl"},
    {"tiny-qwen3moe-16", "iq1_m", kEither, false, 113,
     "token_embd=q8_0 attn_k=q4_K>q5_0 attn_output=q5_K>q5_1 attn_v=q4_K>q5_0 "
     "ffn_down_exps=0-1:q2_K>q4_0,2-15:iq1_m>iq4_nl *=iq1_m>iq4_nl"},
    {"tiny-qwen3moe-16", "iq2_xxs", kEither, false, 113,
     "token_embd=q8_0 attn_k=q4_K>q5_0 attn_output=q5_K>q5_1 attn_v=q4_K>q5_0 "
     "ffn_down_exps=0-1:q2_K>q4_0,2-15:iq2_xxs>iq4_nl *=iq2_xxs>iq4_nl"},
    {"tiny-qwen3moe-16", "iq2_xs", kEither, false, 113,
     "token_embd=q8_0 attn_k=q4_K>q5_0 attn_output=q5_K>q5_1 attn_v=q4_K>q5_0 "
     "ffn_down_exps=0-1:q2_K>q4_0,2-15:iq2_xs>iq4_nl *=iq2_xs>iq4_nl"},
    {"tiny-qwen3moe-16", "iq2_s", kEither, false, 113,
     "token_embd=q8_0 attn_k=q4_K>q5_0 attn_output=q5_K>q5_1 attn_v=q4_K>q5_0 "
     "ffn_down_exps=0-1:iq3_s>iq4_nl,2-15:iq2_xs>iq4_nl *=iq2_xs>iq4_nl"},
    {"tiny-qwen3moe-16", "iq2_m", kEither, false, 113,
     "token_embd=q8_0 attn_k=q4_K>q5_0 attn_output=q5_K>q5_1 attn_v=q4_K>q5_0 "
     "ffn_down_exps=0-1:iq3_s>iq4_nl,2-15:iq2_s>iq4_nl *=iq2_s>iq4_nl"},
    {"tiny-qwen3moe-16", "iq3_xxs", kWithout, false, 113,
     "attn_output=q5_K>q5_1 attn_q=iq2_s>iq4_nl ffn_down_exps=0-1:q4_K>q5_0,2-15:q3_K>q4_0 "
     "ffn_gate_exps=iq3_xxs>iq4_nl ffn_up_exps=iq3_xxs>iq4_nl *=q8_0"},
    {"tiny-qwen3moe-16", "iq3_xxs", kWith, false, 113,
     "attn_output=q5_K>q5_1 attn_q=iq2_s>iq4_nl ffn_down_exps=iq3_xxs>iq4_nl "
     "ffn_gate_exps=iq3_xxs>iq4_nl ffn_up_exps=iq3_xxs>iq4_nl *=q8_0"},
    {"tiny-qwen3moe-16", "iq3_xs", kEither, false, 113,
     "attn_output=q5_K>q5_1 attn_q=iq3_xxs>iq4_nl ffn_down_exps=iq3_s>iq4_nl "
     "ffn_gate_exps=0-1:iq3_s>iq4_nl,2-13:iq3_xxs>iq4_nl,14-15:iq3_s>iq4_nl "
     "ffn_up_exps=0-1:iq3_s>iq4_nl,2-13:iq3_xxs>iq4_nl,14-15:iq3_s>iq4_nl *=q8_0"},
    {"tiny-qwen3moe-16", "iq3_s", kEither, false, 113,
     "token_embd=q8_0 attn_k=q8_0 attn_output=q5_K>q5_1 attn_v=q8_0 *=iq3_s>iq4_nl"},
    {"tiny-qwen3moe-16", "iq3_m", kEither, false, 113,
     "attn_output=q5_K>q5_1 attn_q=iq3_s>iq4_nl "
     "ffn_down_exps=0-1:q4_K>q5_0,2-3:iq3_s>iq4_nl,4:q4_K>q5_0,5-6:iq3_s>iq4_nl,"
     "7:q4_K>q5_0,8-9:iq3_s>iq4_nl,10:q4_K>q5_0,11-12:iq3_s>iq4_nl,13-15:q4_K>q5_0 "
     "ffn_gate_exps=iq3_s>iq4_nl ffn_up_exps=iq3_s>iq4_nl *=q8_0"},
    {"tiny-qwen3moe-16", "tq1_0", kEither, false, 113,
     "token_embd=q8_0 attn_k=q8_0 attn_v=q8_0 *=tq1_0>q4_0"},
    {"tiny-qwen3moe-16", "tq2_0", kEither, false, 113,
     "token_embd=q8_0 attn_k=q8_0 attn_v=q8_0 *=tq2_0>q4_0"},
    // tiny-llama-80
    {"tiny-llama-80", "iq1_s", kEither, false, 562,
     "output=q8_0 token_embd=q2_K>q4_0 attn_output=iq2_xxs>iq4_nl attn_v=q2_K>q4_0 "
     "ffn_down=0-9:q2_K>q4_0,10-79:iq1_s>iq4_nl *=iq1_s>iq4_nl"},
    {"tiny-llama-80", "iq1_m", kEither, false, 562,
     "output=q8_0 token_embd=q2_K>q4_0 attn_output=iq2_xxs>iq4_nl attn_v=q2_K>q4_0 "
     "ffn_down=0-9:q2_K>q4_0,10-79:iq1_m>iq4_nl *=iq1_m>iq4_nl"},
    {"tiny-llama-80", "iq2_xxs", kEither, false, 562,
     "output=q8_0 token_embd=q2_K>q4_0 attn_v=q2_K>q4_0 "
     "ffn_down=0-9:q2_K>q4_0,10-79:iq2_xxs>iq4_nl *=iq2_xxs>iq4_nl"},
    {"tiny-llama-80", "iq2_xs", kEither, false, 562,
     "output=q8_0 token_embd=q2_K>q4_0 attn_v=q2_K>q4_0 "
     "ffn_down=0-9:q2_K>q4_0,10-79:iq2_xs>iq4_nl *=iq2_xs>iq4_nl"},
    {"tiny-llama-80", "iq2_s", kEither, false, 562,
     "output=q8_0 token_embd=iq3_s>iq4_nl attn_output=iq3_s>iq4_nl attn_v=iq3_s>iq4_nl "
     "ffn_down=0-9:iq3_s>iq4_nl,10-79:iq2_xs>iq4_nl *=iq2_xs>iq4_nl"},
    {"tiny-llama-80", "iq2_m", kEither, false, 562,
     "output=q8_0 token_embd=iq3_s>iq4_nl attn_output=iq3_s>iq4_nl attn_v=iq3_s>iq4_nl "
     "ffn_down=0-9:iq3_s>iq4_nl,10-79:iq2_s>iq4_nl *=iq2_s>iq4_nl"},
    {"tiny-llama-80", "iq3_xxs", kWithout, false, 562,
     "output=q8_0 attn_k=iq2_s>iq4_nl attn_q=iq2_s>iq4_nl "
     "ffn_down=0-9:q4_K>q5_0,10-79:q3_K>q4_0 ffn_gate=iq3_xxs>iq4_nl ffn_up=iq3_xxs>iq4_nl "
     "*=iq3_s>iq4_nl"},
    {"tiny-llama-80", "iq3_xxs", kWith, false, 562,
     "output=q8_0 token_embd=iq3_s>iq4_nl attn_k=iq2_s>iq4_nl attn_output=iq3_s>iq4_nl "
     "attn_q=iq2_s>iq4_nl *=iq3_xxs>iq4_nl"},
    {"tiny-llama-80", "iq3_xs", kEither, false, 562,
     "output=q8_0 attn_k=iq3_xxs>iq4_nl attn_q=iq3_xxs>iq4_nl "
     "ffn_gate=0-9:iq3_s>iq4_nl,10-69:iq3_xxs>iq4_nl,70-79:iq3_s>iq4_nl "
     "ffn_up=0-9:iq3_s>iq4_nl,10-69:iq3_xxs>iq4_nl,70-79:iq3_s>iq4_nl *=iq3_s>iq4_nl"},
    {"tiny-llama-80", "iq3_s", kEither, false, 562, "output=q8_0 *=iq3_s>iq4_nl"},
    {"tiny-llama-80", "iq3_m", kEither, false, 562,
     "output=q8_0 attn_output=q4_K>q5_0 attn_v=q5_K>q5_1 "
     "ffn_down=0-9:q4_K>q5_0,10-79:iq3_s>iq4_nl *=iq3_s>iq4_nl"},
    {"tiny-llama-80", "tq1_0", kEither, false, 562,
     "output=q8_0 token_embd=q4_K>q5_0 *=tq1_0>q4_0"},
    {"tiny-llama-80", "tq2_0", kEither, false, 562,
     "output=q8_0 token_embd=q4_K>q5_0 *=tq2_0>q4_0"},
};
// clang-format on

}  // namespace ridge::offline::llama_oracle
