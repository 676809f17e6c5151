/* A thread's share of an exact sum, behind one interface whatever the strategy: trip() at
 * each trip's start; vec(raw, u, count) vector u of a trip whose first count of kU
 * vectors are loaded; one(raw) a vector of the loop's rolled tail; scalar(x) an element
 * of the head or the tail; end(sign_clear) the thread's kRows expansions of K terms of F,
 * after its last element. At every moment the sum of the thread's elements equals its
 * expansions plus its spill terms plus what it flushed to the block's long accumulator,
 * exactly. ExactIn<T>::kStrategy picks the strategy. */
#pragma once

#include "thread_anchor.cuh"
#include "thread_expansion.cuh"
#include "traits.cuh"

namespace gs {

template <typename T, int kU, ExactStrategy S = ExactIn<T>::kStrategy> struct ExactThreadOf {
    typedef ExactExpansionThread<T, kU> type;
};
template <typename T, int kU> struct ExactThreadOf<T, kU, kExactAnchor> {
    typedef ExactAnchorThread<T, kU> type;
};
template <typename T, int kU> using ExactThread = typename ExactThreadOf<T, kU>::type;

} // namespace gs
