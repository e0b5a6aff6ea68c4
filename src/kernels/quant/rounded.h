// A float product kept apart from the add that follows it.
#pragma once

namespace ridge::kernels {

// v as an opaque value, so that the compiler cannot contract the product it holds with a
// following add into an fma (GCC's default in C++ where the target has FMA, e.g. -march=native;
// the baseline x86-64 the reference files are built for has none, so this only guards other
// builds).
inline float rounded(float v) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__("" : "+x"(v));
#endif
  return v;
}

}  // namespace ridge::kernels
