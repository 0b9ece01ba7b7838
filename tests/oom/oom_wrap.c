/* Allocation-failure injection for the test-only plugin libanvil_pjrt_oom.so (never in the
 * real plugin). That library is the same core linked with --wrap for malloc, calloc, realloc,
 * aligned_alloc, posix_memalign, strdup, strndup and free (CMakeLists.txt): every allocation
 * anvil's own C code makes comes here, while those inside the C library, OpenBLAS, oneDNN and
 * gloo do not. These are every allocator anvil's C code calls (tests/oom/check_allocators.sh,
 * a ctest, keeps it so); wrapping at link time covers every call site without touching one.
 *
 * anvil_oom_arm(n, persistent) makes allocation number n (counted from the arm, from 1) fail,
 * and with `persistent` every one after it too; 0 disarms. Counters let a test see whether the
 * failure fired and whether every allocation was freed (live count). Process-wide state:
 * this library exists to be driven by one test process. */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t alignment, size_t n);
int __real_posix_memalign(void **out, size_t alignment, size_t n);
void __real_free(void *p);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t alignment, size_t n);
int __wrap_posix_memalign(void **out, size_t alignment, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
void __wrap_free(void *p);

#define EXPORT __attribute__((visibility("default")))
EXPORT void anvil_oom_arm(long long fail_at, int persistent);
EXPORT void anvil_oom_counts(long long *allocations, long long *injected, long long *live);

static atomic_llong fail_at_;      /* 0: off */
static atomic_int persistent_;
static atomic_llong allocations_;  /* since the last arm */
static atomic_llong injected_;     /* failures returned since the last arm */
static atomic_llong live_;         /* allocations not yet freed, ever */

void anvil_oom_arm(long long fail_at, int persistent) {
  atomic_store(&fail_at_, 0);
  atomic_store(&allocations_, 0);
  atomic_store(&injected_, 0);
  atomic_store(&persistent_, persistent);
  atomic_store(&fail_at_, fail_at);
}

void anvil_oom_counts(long long *allocations, long long *injected, long long *live) {
  *allocations = atomic_load(&allocations_);
  *injected = atomic_load(&injected_);
  *live = atomic_load(&live_);
}

/* Called on every injected failure: a place for a debugger's breakpoint
 * (gdb -ex 'break oom_injected' ...) to show which allocation failed. */
__attribute__((noinline)) static void oom_injected(long long k) { __asm__ volatile("" ::"r"(k)); }

/* Whether this allocation is to fail. */
static int fail_now(void) {
  long long k = atomic_fetch_add(&allocations_, 1) + 1;
  long long at = atomic_load(&fail_at_);
  if (at <= 0 || k < at || (k > at && !atomic_load(&persistent_))) return 0;
  atomic_fetch_add(&injected_, 1);
  oom_injected(k);
  return 1;
}

static void *counted(void *p) {
  if (p) atomic_fetch_add(&live_, 1);
  return p;
}

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : counted(__real_malloc(n)); }

void *__wrap_calloc(size_t k, size_t n) { return fail_now() ? NULL : counted(__real_calloc(k, n)); }

void *__wrap_realloc(void *p, size_t n) {
  if (fail_now()) return NULL;
  if (!p) return counted(__real_realloc(NULL, n));
  return __real_realloc(p, n ? n : 1); /* never the free-on-zero case: the count stays exact */
}

void *__wrap_aligned_alloc(size_t alignment, size_t n) {
  return fail_now() ? NULL : counted(__real_aligned_alloc(alignment, n));
}

int __wrap_posix_memalign(void **out, size_t alignment, size_t n) {
  if (fail_now()) return 12; /* ENOMEM */
  int r = __real_posix_memalign(out, alignment, n);
  if (r == 0) counted(*out);
  return r;
}

char *__wrap_strdup(const char *s) { return __wrap_strndup(s, strlen(s)); }

char *__wrap_strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *d = __wrap_malloc(len + 1);
  if (!d) return NULL;
  memcpy(d, s, len);
  d[len] = 0;
  return d;
}

void __wrap_free(void *p) {
  if (p) atomic_fetch_sub(&live_, 1);
  __real_free(p);
}
