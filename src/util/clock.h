/* Clocks: the one monotonic clock every timing in anvil uses (call traces, Execute timing its
 * runs, the profiler), and the wall clock the profiler needs to place its events on a
 * framework's timeline (whose timestamps are nanoseconds since the Unix epoch). */
#ifndef ANVIL_UTIL_CLOCK_H
#define ANVIL_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t av_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t av_wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
