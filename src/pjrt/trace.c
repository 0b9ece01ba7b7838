/* ANVIL_TRACE=1: one line on stderr per PJRT call (entry and exit), with key arguments, the
 * result code and the time spent. The environment is read once per process (pthread_once);
 * the flag is read-only afterwards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pjrt/pjrt_internal.h"

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static bool trace_on; /* written once under trace_once */

static void trace_init(void) {
  const char *v = getenv("ANVIL_TRACE");
  trace_on = v && *v && strcmp(v, "0") != 0;
}

bool av_trace_enabled(void) {
  pthread_once(&trace_once, trace_init);
  return trace_on;
}

static const char *semantics_name(PJRT_HostBufferSemantics s) {
  switch (s) {
    case PJRT_HostBufferSemantics_kImmutableOnlyDuringCall: return "ImmutableOnlyDuringCall";
    case PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes:
      return "ImmutableUntilTransferCompletes";
    case PJRT_HostBufferSemantics_kImmutableZeroCopy: return "ImmutableZeroCopy";
    case PJRT_HostBufferSemantics_kMutableZeroCopy: return "MutableZeroCopy";
  }
  return "?";
}

static void dims_str(char *buf, size_t n, const int64_t *dims, size_t rank) {
  size_t len = 0;
  buf[0] = '\0';
  len += (size_t)snprintf(buf + len, n - len, "[");
  for (size_t i = 0; i < rank && dims && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "," : "", (long long)dims[i]);
  if (len < n) snprintf(buf + len, n - len, "]");
}

/* Key arguments of the calls worth describing; "" for the rest. Only fields inside the
 * caller's struct_size are read. */
static void describe(char *buf, size_t n, const char *fn, const void *a) {
  buf[0] = '\0';
  if (!a) return;
  char dims[160];
  if (!strcmp(fn, "PJRT_Client_BufferFromHostBuffer")) {
    const PJRT_Client_BufferFromHostBuffer_Args *x = a;
    if (x->struct_size < PJRT_Client_BufferFromHostBuffer_Args_MIN_SIZE) return;
    dims_str(dims, sizeof dims, x->dims, x->num_dims > 32 ? 32 : x->num_dims);
    snprintf(buf, n, "type=%s dims=%s semantics=%s%s", av_pjrt_type_name(x->type), dims,
             semantics_name(x->host_buffer_semantics), x->byte_strides ? " strided" : "");
  } else if (!strcmp(fn, "PJRT_Client_Create")) {
    const PJRT_Client_Create_Args *x = a;
    if (x->struct_size < PJRT_Client_Create_Args_MIN_SIZE) return;
    snprintf(buf, n, "num_options=%zu", x->num_options);
  } else if (!strcmp(fn, "PJRT_Client_Compile")) {
    const PJRT_Client_Compile_Args *x = a;
    if (x->struct_size < PJRT_Client_Compile_Args_MIN_SIZE || !x->program) return;
    snprintf(buf, n, "format=%.*s code_size=%zu options_size=%zu",
             (int)(x->program->format_size > 32 ? 32 : x->program->format_size),
             x->program->format ? x->program->format : "", x->program->code_size,
             x->compile_options_size);
  } else if (!strcmp(fn, "PJRT_LoadedExecutable_Execute")) {
    const PJRT_LoadedExecutable_Execute_Args *x = a;
    if (x->struct_size < PJRT_LoadedExecutable_Execute_Args_MIN_SIZE) return;
    snprintf(buf, n, "num_devices=%zu num_args=%zu", x->num_devices, x->num_args);
  } else if (!strcmp(fn, "PJRT_Buffer_ToHostBuffer")) {
    const PJRT_Buffer_ToHostBuffer_Args *x = a;
    if (x->struct_size < PJRT_Buffer_ToHostBuffer_Args_MIN_SIZE) return;
    snprintf(buf, n, "dst_size=%zu%s", x->dst_size, x->host_layout ? " host_layout" : "");
  }
}

void av_trace_enter(av_trace_span *s, const char *fn, const void *args) {
  char desc[256];
  describe(desc, sizeof desc, fn, args);
  /* Every argument struct starts with the caller's struct_size: which API version it speaks. */
  if (args)
    fprintf(stderr, "anvil: > %s(size=%zu%s%s)\n", fn, *(const size_t *)args, desc[0] ? " " : "",
            desc);
  else
    fprintf(stderr, "anvil: > %s()\n", fn);
  s->fn = fn;
  s->t0_ns = av_now_ns();
}

void av_trace_exit(av_trace_span *s, const void *args, const PJRT_Error *e) {
  double us = (double)(av_now_ns() - s->t0_ns) / 1000.0;
  char desc[256];
  describe(desc, sizeof desc, s->fn, args);
  if (e)
    fprintf(stderr, "anvil: < %s(%s) -> %s %.1fus: %s\n", s->fn, desc,
            av_code_name(av_error_code(e)), us, av_error_message(e));
  else
    fprintf(stderr, "anvil: < %s(%s) -> OK %.1fus\n", s->fn, desc, us);
}
