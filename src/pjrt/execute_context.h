/* PJRT_ExecuteContext (execute_context.c): the user data a caller attaches to executions,
 * and how Execute hands it to the runtime as a plain list (runtime/user_data.h). */
#ifndef ANVIL_PJRT_EXECUTE_CONTEXT_H
#define ANVIL_PJRT_EXECUTE_CONTEXT_H

#include "pjrt/pjrt_internal.h"
#include "runtime/user_data.h"

/* Adds an entry (PJRT_FFI_UserData_Add): an error when `c` is not a live context, when
 * `type_id` is already there (ALREADY_EXISTS, as XLA) or the context is full. */
PJRT_Error *av_execute_context_add(PJRT_ExecuteContext *c, int64_t type_id, void *data,
                                   void (*deleter)(void *));
/* NULL when `c` is a live context this plugin made; an INVALID_ARGUMENT error naming `fn`
 * otherwise. */
PJRT_Error *av_execute_context_check(PJRT_ExecuteContext *c, const char *fn);
/* For one execution: a copy of the entries into `list` (items malloc'd) and a reference that
 * keeps the context's data (its deleters) alive until av_execute_context_done. */
PJRT_Error *av_execute_context_use(PJRT_ExecuteContext *c, av_user_data_list *list);
/* The execution ended: frees the copy and drops the reference (nothing when `c` is NULL). */
void av_execute_context_done(PJRT_ExecuteContext *c, av_user_data_list *list);

#endif
