/* Stand-in, in the build directory, for an exact-sum header that backends/common/
 * exact/anchor.cuh includes (test_exact_anchor.cpp defines what it takes from it). */
#pragma once
