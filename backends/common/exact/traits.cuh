/* What the exact sums need to know of each input type, as traits, so the algorithms never
 * tell types apart by their size:
 *   F, K        a thread's expansions: K terms of type F
 *   kStrategy   the per-thread strategy (exact/thread.cuh): floating expansions, or the
 *               anchored fixed point of exact/anchor.cuh
 *   kSign       the sign bits of the elements in a 32-bit word (float64: its odd words)
 *   kSpillFast  whether a block whose threads used their spill terms can still be fast:
 *               where those terms are narrower than the two-double fold, or take what
 *               moving float32's window left behind; float64's are as wide as the fold, so
 *               a residual beyond them means the block's sum does not fit, and marks the
 *               block slow (exact/spill.cuh)
 *   kOneDouble  whether the block's and the partials' checked folds try one double before
 *               two (a float64 sum seldom fits one)
 *   kPartTrip   whether the loop's last part trip issues its loads at once (float32; the
 *               other kernels' loops lost registers to it) */
#pragma once

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gs {

enum ExactStrategy { kExactExpansion, kExactAnchor };

template <typename T> struct ExactIn;
#define GS_EXACT_IN(T, F_, K_, Strategy, SF, OneDouble, PartTrip, Sign)                        \
    template <> struct ExactIn<T> {                                                          \
        typedef F_ F;                                                                        \
        static const int K = K_;                                                             \
        static const ExactStrategy kStrategy = Strategy;                                     \
        static const bool kSpillFast = SF, kOneDouble = OneDouble, kPartTrip = PartTrip;     \
        static const uint32_t kSign = Sign;                                                  \
    };
GS_EXACT_IN(float, double, 2, kExactAnchor, true, true, true, 0x80000000u)
GS_EXACT_IN(double, double, 2, kExactAnchor, false, false, false, 0x80000000u)
GS_EXACT_IN(__half, float, 2, kExactExpansion, true, true, false, 0x80008000u)
GS_EXACT_IN(__nv_bfloat16, float, 2, kExactExpansion, true, true, false, 0x80008000u)
#undef GS_EXACT_IN

} // namespace gs
