/* vmath.h: shared helpers for the hand-written gradients in bench/hand/.
 *
 * Vector math. glibc's libmvec has AVX2 and AVX-512 versions of expf, logf,
 * log1pf and tanhf (accurate to a few ulp), but <math.h> only announces them
 * to GCC under -ffast-math (bits/math-vector.h tests __FAST_MATH__), so with
 * plain -O3 -march=native -fno-math-errno every call stays scalar. An expert
 * who wants vector transcendentals without the rest of -ffast-math (no
 * reassociation, no finite-math assumptions) declares the SIMD variants
 * himself, exactly as glibc's header would; GCC then calls
 * _ZGVeN16v_expf & co. from loops it vectorizes, and libm's linker script
 * pulls in libmvec.so. Loops that reduce use `#pragma omp simd reduction`
 * (compiled with -fopenmp-simd: no OpenMP runtime, no threads), the one
 * reassociation the expert allows, so sums vectorize too.
 *
 * Also: a 64-byte aligned scratch allocator (what sg_rt_alloc does for
 * generated code), and the runtime's GEMM (sg_rt_gemm_f32, sgrt.h), which an
 * expert would take from BLAS; we use the very kernel sgc's code calls so
 * that matrix products cost the same on both sides and the comparison
 * measures everything else. */
#ifndef BENCH_VMATH_H
#define BENCH_VMATH_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "sgrt.h" /* sg_rt_gemm_f32 */

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define VM_SIMD __attribute__((simd("notinbranch")))
#else
#define VM_SIMD
#endif
float expf(float) VM_SIMD;
float logf(float) VM_SIMD;
float log1pf(float) VM_SIMD;
float tanhf(float) VM_SIMD;

/* Numerically stable pieces built on one exp: for e = exp(-|x|),
 *   sigmoid(x)  = x >= 0 ? 1/(1+e) : e/(1+e)
 *   softplus(x) = max(x, 0) + log1p(e)
 * Written with conditional expressions so that GCC turns them into blends. */
static inline float vm_sigmoid(float x) {
  float e = expf(-fabsf(x));
  float r = 1.0f / (1.0f + e);
  return x >= 0.0f ? r : e * r;
}

/* Scratch buffers: 64-byte aligned, freed with free(). */
static inline float *vm_alloc(int64_t count) {
  size_t bytes = ((size_t)count * sizeof(float) + 63) & ~(size_t)63;
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
    return NULL;
  return p;
}

#endif
