/* avx512.c: whether the AVX-512 baselines may run (avx512.h). */
#include "avx512.h"

int hx_avx512(void) {
#if HX_X86
  static int known = -1;
  if (known < 0) {
    __builtin_cpu_init();
    known = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("fma");
  }
  return known;
#else
  return 0;
#endif
}
