#include "base/cpu_features.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

namespace ridge {
namespace {

std::string read_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? std::string() : line.substr(start);
      }
    }
  }
  return {};
}

struct CpuidRegs {
  unsigned eax, ebx, ecx, edx;
};
CpuidRegs cpuid(unsigned leaf, unsigned sub) {
  CpuidRegs r;
  __asm__("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx) : "a"(leaf), "c"(sub));
  return r;
}

// AMX: the CPU has the tiles and int8 dot products, the OS saves their state, and Linux lets this
// process use the 8 KiB of tile data (permission asked once, for the whole process).
bool detect_amx_int8() {
  if (cpuid(0, 0).eax < 7) return false;
  const unsigned edx7 = cpuid(7, 0).edx;
  if (((edx7 >> 24) & 1u) == 0 || ((edx7 >> 25) & 1u) == 0) return false;  // AMX-TILE, AMX-INT8
  if (((cpuid(1, 0).ecx >> 27) & 1u) == 0) return false;  // no OSXSAVE: xgetbv is not available
  uint32_t xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if (((xcr0_lo >> 17) & 3u) != 3u) return false;
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

CpuFeatures detect() {
  CpuFeatures f;
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = true;  // every AVX2 CPU has F16C; checked below through cpuid bit
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  f.f16c = (cpuid(1, 0).ecx >> 29) & 1u;
  f.amx_int8 = detect_amx_int8();
  f.model_name = read_model_name();
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace ridge
