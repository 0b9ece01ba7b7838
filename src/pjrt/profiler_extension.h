/* The PJRT profiler extension (profiler_extension.c): last in the PJRT_Api extension chain. */
#ifndef ANVIL_PJRT_PROFILER_EXTENSION_H
#define ANVIL_PJRT_PROFILER_EXTENSION_H

#include "anvil/pjrt_profiler.h"

struct av_profiler;

extern const PJRT_Profiler_Extension av_profiler_ext;

/* Clients announce their profiler while they live, so that profiling sessions (which the
 * framework starts without naming a client) reach it. Adding during a session starts its
 * capture; removing during a session keeps what it captured for the session. */
void av_profiler_registry_add(struct av_profiler *p);
void av_profiler_registry_remove(struct av_profiler *p);
/* 1 for the first client created with ANVIL_PROFILE in this process, 2 for the next...:
 * clients after the first write FILE.2, FILE.3, ... instead of overwriting FILE. */
int av_profiler_next_trace_number(void);

#endif
