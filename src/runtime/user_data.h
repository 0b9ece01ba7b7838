/* Per-execution user data: what a caller attaches to one execution for the custom-call
 * handlers it runs to find (XLA FFI's ExecutionContext user data, XLA_FFI_ExecutionContext_Get).
 * The runtime sees a plain list of (type id, pointer) pairs: whoever starts the execution owns
 * the list and the data, and keeps both alive until the execution ends (the PJRT layer's
 * PJRT_ExecuteContext does, src/pjrt/execute_context.c). Every frame of the execution (loop
 * bodies, called functions, the per-device threads of a manual computation) sees the list. */
#ifndef ANVIL_RUNTIME_USER_DATA_H
#define ANVIL_RUNTIME_USER_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct av_user_data_entry {
  int64_t type_id;
  void *data;
} av_user_data_entry;

typedef struct av_user_data_list {
  const av_user_data_entry *items;
  size_t n;
} av_user_data_list;

/* The data attached under `type_id` in `list` (NULL: no list); false when there is none. */
static inline bool av_user_data_find(const av_user_data_list *list, int64_t type_id,
                                     void **data) {
  for (size_t i = 0; list && i < list->n; i++)
    if (list->items[i].type_id == type_id) {
      *data = list->items[i].data;
      return true;
    }
  return false;
}

#endif
