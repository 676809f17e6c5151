/* A thread's exact sum, by ExactIn<T>::kStrategy: trip() opens a trip; vec(), one(),
 * scalar() add elements; end() gives kRows expansions. Always exactly: the elements' sum =
 * expansions + spill terms + what was flushed. */
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
