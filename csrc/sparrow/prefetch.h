// prefetch_line(p): a hint to start loading the cache line of p (no effect on any result).
//
// Not __builtin_prefetch alone: GCC's pure-const pass counts a prefetch as no side effect, so a
// function that only reads memory and prefetches (a hint for work to come, such as the
// simulator's look ahead at the messages in flight) is found pure, and a call to it, whose
// result is void, is deleted with everything it would have loaded (seen with GCC 12: -O2 and
// -O3 kept none of those prefetches). The empty volatile asm is a side effect the compiler
// keeps; it emits no instruction. always_inline puts it in the caller before that analysis.
#pragma once

namespace sparrow {

__attribute__((always_inline)) inline void prefetch_line(const void* p) {
  __builtin_prefetch(p);
  asm volatile("");
}

}  // namespace sparrow
