// x86 CPU features detected once from CPUID (through the compiler's cpu-supports builtins).
#pragma once

#include <string>

namespace ridge {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  // AMX-TILE and AMX-INT8 (CPUID 7.0 EDX bits 24, 25), the OS saving their state (XCR0 bits 17,
  // 18) and Linux granting this process the tile data (arch_prctl ARCH_REQ_XCOMP_PERM): all four.
  bool amx_int8 = false;
  std::string model_name;  // from /proc/cpuinfo "model name", empty if unknown

  bool has_avx2_set() const { return avx2 && fma && f16c; }
  bool has_avx512_set() const {
    return has_avx2_set() && avx512f && avx512bw && avx512vl && avx512dq && avx512vnni && avx512bf16;
  }
};

// Features of the machine running this process (computed once, then cached).
const CpuFeatures& cpu_features();

}  // namespace ridge
