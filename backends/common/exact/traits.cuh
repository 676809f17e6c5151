/* What the exact sums know of each input type, so no algorithm tests sizeof:
 *   F, K        a thread's expansions: K terms of type F
 *   kStrategy   the per-thread strategy (exact/thread.cuh)
 *   kSign       the elements' sign bits in a 32-bit word (float64: its odd words)
 *   kSpillFast  whether a block that used spill terms stays fast (not float64: as wide as
 *               the two-double fold)
 *   kOneDouble  whether checked folds try one double before two
 *   kPartTrip   whether the last partial trip issues its loads at once */
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
