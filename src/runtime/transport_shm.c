/* The same-host transport (runtime/transport.h): processes of one job on one machine exchange
 * data through a POSIX shared-memory segment instead of TCP loopback, and every other set of
 * processes goes to the transport given for crossing hosts (gloo).
 *
 * Which sets share a host: each process publishes in the key-value store its boot id, network
 * namespace and host name (plus its pid, its start time and its pid namespace, for noticing a
 * peer that died). A set whose members all published the same host goes on shared memory:
 * the lowest member creates a segment under a random name, publishes the name and a random
 * nonce, the others map it and check the nonce, each says in the store whether it could, and
 * the name is unlinked once every member answered. Only if all could is the segment used;
 * otherwise the set falls back to the other transport. Processes in separate network
 * namespaces count as separate hosts (two containers, or the tests' veth "hosts").
 *
 * The segment: a header, one control line per member (its step counter, a futex word, and a
 * description of the operation it is in), per member the sizes it sends in an all_to_all, and
 * per member two data buffers of `chunk` bytes used alternately. Operations move their data in
 * chunks: each member copies its chunk into its buffer and advances its step counter, then
 * waits until every member reached that step. All-reduces of more than a few hundred KiB
 * reduce-scatter then all-gather within each chunk (member r reduces the r-th part of the
 * chunk, over every member's buffer in member order, and publishes it; then everyone copies
 * everyone's part), so every member reduces 1/n of the data and all of them work in
 * parallel; smaller ones skip the second step (every member reduces the whole chunk, in the
 * same order, so every member gets the same bits). Two buffers per member mean a member may
 * overwrite a buffer only after every member passed the step that follows its use, which the
 * waits already ensure.
 *
 * What other processes write there is untrusted: offsets and sizes come from this process's
 * own arguments, never from the segment; step counters are only compared; each member's
 * description of its operation (and the sizes it sends in an all_to_all) is checked against
 * ours, and a mismatch breaks the set in every member. Every wait is bounded by the
 * transport's timeout, and a member whose process has exited is noticed within ~100 ms. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/transport.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax(void) { _mm_pause(); }
#else
static inline void cpu_relax(void) {}
#endif

enum {
  SHM_VERSION = 1,
  SHM_MAX_CHUNK = 1 << 20,
  SHM_MIN_CHUNK = 4 << 10,
  SHM_SEGMENT_BUDGET = 16 << 20, /* data buffers of all members together, at most */
  SHM_DIRECT_MAX = 128 << 10,    /* all-reduces up to this size skip the all-gather step */
  SHM_SPIN_NS = 5000,           /* spin this long before sleeping on the futex */
  SHM_SLEEP_MS = 50,             /* longest single sleep: deadlines and liveness are checked */
  SHM_LIVENESS_MS = 100,         /* how often a waiting member checks that the peer lives */
  SHM_MAX_VALUE = 2048           /* of what a process publishes in the store */
};
static const uint64_t SHM_MAGIC = 0x6d68732d6c69766eull; /* "nvil-shm" */

enum { OP_ALL_REDUCE = 1, OP_ALL_GATHER = 2, OP_ALL_TO_ALL = 3 };
/* why a set is broken (in the header's `broken`, with the member that broke it) */
enum { BROKEN_FAILED = 1, BROKEN_MISMATCH = 2, BROKEN_CLOSED = 3 };

typedef struct shm_header {
  uint64_t magic;
  uint32_t version, nmembers;
  uint64_t chunk, segment_bytes;
  char nonce[48];
  atomic_uint broken; /* 0, or (member + 1) << 2 | why */
  char pad[128 - 8 - 8 - 16 - 48 - 4];
} shm_header;

/* What operation a member is in, written before its first step. */
typedef struct shm_op {
  uint32_t op, tag;
  uint64_t count, elem_size, shape;
} shm_op;

typedef struct shm_member {
  atomic_uint step;     /* steps this member completed (the futex word waiters sleep on) */
  atomic_uint sleepers; /* members sleeping on `step` */
  char pad0[56];
  /* Two, like the data buffers (an operation uses the one of the parity of the chunks moved
   * before it): a peer may still read the previous operation's while this one starts. */
  shm_op ops[2];
} shm_member;

_Static_assert(sizeof(shm_header) == 128, "header is two cache lines");
_Static_assert(sizeof(shm_member) == 128, "a member's control is two cache lines");

typedef enum { SET_SHM, SET_OTHER, SET_FAILED } set_mode;

typedef struct shm_set {
  struct shm_set *next;
  int *procs, n, rank;
  set_mode mode;
  char why[400]; /* SET_FAILED: the failure; SET_OTHER: why not shared memory */
  unsigned char *base;
  size_t bytes, chunk;
  shm_header *hdr;
  shm_member *members;
  uint64_t *sizes; /* [2][n][n] bytes each member sends to each in an all_to_all */
  unsigned char *data;
  uint32_t step;    /* steps this process completed */
  uint64_t buffers; /* chunks moved: its parity picks the buffer */
  /* for noticing members that exited: valid where live_check */
  bool *live_check;
  long long *pid;
  unsigned long long *start;
} shm_set;

typedef struct shm_transport {
  av_transport base; /* first: the C side sees an av_transport* */
  av_kv_store kv;
  av_transport *other; /* between hosts (NULL: shared memory only) */
  int me;
  int64_t timeout_ms;
  char prefix[64];
  char host[400];   /* boot id, network namespace, host name */
  char pidns[64];
  shm_set *sets;
} shm_transport;

static shm_transport *self(av_transport *t) { return (shm_transport *)t; }

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static int64_t now_ms(void) { return now_ns() / 1000000; }

static void futex_wait(atomic_uint *w, unsigned v, int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  syscall(SYS_futex, (void *)w, FUTEX_WAIT, v, &ts, NULL, 0);
}
static void futex_wake(atomic_uint *w) {
  syscall(SYS_futex, (void *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* ------------------------------------------------------------------ who we are */

static void read_line(const char *path, char *out, size_t cap) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (!fgets(out, (int)cap, f)) out[0] = '\0';
  fclose(f);
  out[strcspn(out, "\n")] = '\0';
}

static void printable(char *s) {
  for (; *s; s++)
    if (*s <= ' ' || *s >= 127) *s = '_';
}

/* Field 22 of /proc/<pid>/stat (start time in clock ticks since boot) and its state letter;
 * false when the process is gone. */
static bool process_stat(long long pid, char *state, unsigned long long *start) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%lld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the command name may hold anything */
  if (!p || p[1] != ' ' || !p[2]) return false;
  *state = p[2];
  p += 3;
  for (int field = 4; field < 22 && p; field++) { /* to the start time, field 22 */
    p = strchr(p, ' ');
    if (p) p++;
  }
  if (!p) return false;
  *start = strtoull(p, NULL, 10);
  return true;
}

static void identify(shm_transport *t) {
  char boot[64], net[64], name[128] = "?";
  read_line("/proc/sys/kernel/random/boot_id", boot, sizeof boot);
  ssize_t k = readlink("/proc/self/ns/net", net, sizeof net - 1);
  net[k > 0 ? k : 0] = '\0';
  k = readlink("/proc/self/ns/pid", t->pidns, sizeof t->pidns - 1);
  t->pidns[k > 0 ? k : 0] = '\0';
  if (gethostname(name, sizeof name) != 0) snprintf(name, sizeof name, "?");
  name[sizeof name - 1] = '\0';
  snprintf(t->host, sizeof t->host, "%s,%s,%s", boot[0] ? boot : "?", net[0] ? net : "?", name);
  printable(t->host);
  printable(t->pidns);
  if (!t->pidns[0]) snprintf(t->pidns, sizeof t->pidns, "?");
}

/* What each process publishes: "anvil-shm 1 <pid> <start> <pid ns> <host>". */
static av_code publish_self(shm_transport *t, av_diag *d) {
  char state = 0, key[128], value[SHM_MAX_VALUE];
  unsigned long long start = 0;
  long long pid = (long long)getpid();
  if (!process_stat(pid, &state, &start)) start = 0;
  snprintf(key, sizeof key, "%sshm/process/%d", t->prefix, t->me);
  snprintf(value, sizeof value, "anvil-shm 1 %lld %llu %s %s", pid, start, t->pidns, t->host);
  return t->kv.put(t->kv.ctx, key, value, strlen(value), d);
}

/* Reads process `proc`'s entry: its host, and whether its pid can be watched from here. */
static av_code read_process(shm_transport *t, int proc, char *host, size_t host_cap,
                            bool *watch, long long *pid, unsigned long long *start, av_diag *d) {
  char key[128];
  snprintf(key, sizeof key, "%sshm/process/%d", t->prefix, proc);
  char *v = NULL;
  size_t vs = 0;
  av_diag kd;
  av_diag_init(&kd);
  if (t->kv.get(t->kv.ctx, key, t->timeout_ms, &v, &vs, &kd) != AV_OK)
    return av_diag_set(d, kd.code,
                       "process %d did not say which host it is on (does it run with another "
                       "ANVIL_COLLECTIVES?): %s",
                       proc, kd.msg);
  char text[SHM_MAX_VALUE], pidns[SHM_MAX_VALUE], h[SHM_MAX_VALUE];
  int used = 0;
  bool ok = vs < sizeof text && memchr(v, '\0', vs) == NULL;
  if (ok) {
    memcpy(text, v, vs);
    text[vs] = '\0';
    ok = sscanf(text, "anvil-shm 1 %lld %llu %2047s %2047s%n", pid, start, pidns, h, &used) == 4 &&
         (size_t)used == vs && *pid > 0 && strlen(h) < host_cap;
  }
  free(v);
  if (!ok)
    return av_diag_set(d, AV_DATA_LOSS,
                       "process %d published a malformed entry under '%s' in the key-value store",
                       proc, key);
  snprintf(host, host_cap, "%s", h);
  *watch = strcmp(pidns, t->pidns) == 0 && *start != 0;
  return AV_OK;
}

/* ------------------------------------------------------------------ sets */

static void set_name(const int *procs, int n, char *out, size_t cap) {
  size_t len = 0;
  out[0] = '\0';
  if (n <= 32) {
    for (int i = 0; i < n && len + 16 < cap; i++)
      len += (size_t)snprintf(out + len, cap - len, "%s%d", i ? "," : "", procs[i]);
    return;
  }
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; i++) h = (h ^ (uint64_t)procs[i]) * 1099511628211ull;
  snprintf(out, cap, "h%d-%llu", n, (unsigned long long)h);
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Where everything lies in a segment of n members with `chunk`-byte buffers. */
static size_t layout(int n, size_t chunk, size_t *sizes_at, size_t *data_at) {
  size_t at = sizeof(shm_header) + (size_t)n * sizeof(shm_member);
  *sizes_at = at;
  at = align_up(at + 2 * (size_t)n * (size_t)n * sizeof(uint64_t), 4096);
  *data_at = at;
  return at + (size_t)n * 2 * chunk;
}

static size_t chunk_for(int n) {
  size_t c = SHM_SEGMENT_BUDGET / (2 * (size_t)n);
  if (c > SHM_MAX_CHUNK) c = SHM_MAX_CHUNK;
  c = c / 4096 * 4096;
  return c < SHM_MIN_CHUNK ? SHM_MIN_CHUNK : c;
}

static void attach_layout(shm_set *s) {
  size_t sizes_at, data_at;
  layout(s->n, s->chunk, &sizes_at, &data_at);
  s->hdr = (shm_header *)s->base;
  s->members = (shm_member *)(s->base + sizeof(shm_header));
  s->sizes = (uint64_t *)(s->base + sizes_at);
  s->data = s->base + data_at;
}

static void random_hex(char *out, size_t bytes) {
  unsigned char r[32];
  if (bytes > sizeof r) bytes = sizeof r;
  size_t got = 0;
  while (got < bytes) {
    ssize_t k = getrandom(r + got, bytes - got, 0);
    if (k <= 0) { /* no entropy source: time and pid, still unique enough for a name */
      uint64_t x = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
      for (; got < bytes; got++, x = x * 6364136223846793005ull + 1) r[got] = (unsigned char)(x >> 56);
      break;
    }
    got += (size_t)k;
  }
  for (size_t i = 0; i < bytes; i++) sprintf(out + 2 * i, "%02x", r[i]);
}

static void unmap(shm_set *s) {
  if (s->base) munmap(s->base, s->bytes);
  s->base = NULL;
}

/* The lowest member: makes the segment. Returns the name to publish, or sets why. */
static bool create_segment(shm_set *s, char *name, size_t name_cap, char *nonce) {
  char hex[33];
  random_hex(hex, 16);
  random_hex(nonce, 16);
  snprintf(name, name_cap, "/anvil-%s", hex);
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    snprintf(s->why, sizeof s->why, "shm_open(%s): %s", name, strerror(errno));
    return false;
  }
  /* the pages are reserved now: a full /dev/shm (containers often have 64 MiB) fails here,
   * and the set falls back, instead of a SIGBUS on first touch later */
  int err = posix_fallocate(fd, 0, (off_t)s->bytes);
  bool ok = err == 0;
  if (!ok) errno = err;
  if (ok) {
    void *p = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ok = p != MAP_FAILED;
    if (ok) s->base = p;
  }
  if (!ok) snprintf(s->why, sizeof s->why, "cannot size or map %s: %s", name, strerror(errno));
  close(fd);
  if (!ok) {
    shm_unlink(name);
    return false;
  }
  attach_layout(s);
  s->hdr->magic = SHM_MAGIC;
  s->hdr->version = SHM_VERSION;
  s->hdr->nmembers = (uint32_t)s->n;
  s->hdr->chunk = s->chunk;
  s->hdr->segment_bytes = s->bytes;
  snprintf(s->hdr->nonce, sizeof s->hdr->nonce, "%s", nonce);
  return true;
}

/* Another member: maps the segment the lowest one published and checks it is that one. */
static bool open_segment(shm_set *s, const char *name, const char *nonce) {
  int fd = shm_open(name, O_RDWR, 0);
  if (fd < 0) {
    snprintf(s->why, sizeof s->why, "shm_open(%s): %s", name, strerror(errno));
    return false;
  }
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && st.st_size >= 0 && (size_t)st.st_size == s->bytes;
  if (ok) {
    void *p = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ok = p != MAP_FAILED;
    if (ok) s->base = p;
  }
  close(fd);
  if (!ok) {
    snprintf(s->why, sizeof s->why, "%s is not the expected segment of %zu bytes", name, s->bytes);
    return false;
  }
  attach_layout(s);
  shm_header *h = s->hdr;
  if (h->magic != SHM_MAGIC || h->version != SHM_VERSION || h->nmembers != (uint32_t)s->n ||
      h->chunk != s->chunk || h->segment_bytes != s->bytes ||
      strncmp(h->nonce, nonce, sizeof h->nonce) != 0) {
    snprintf(s->why, sizeof s->why, "%s holds another segment (nonce mismatch)", name);
    unmap(s);
    return false;
  }
  return true;
}

/* Agrees with the set's other members on using shared memory (see the top of the file). */
static av_code setup_set(shm_transport *t, shm_set *s, av_diag *d) {
  char host[SHM_MAX_VALUE];
  bool same = true;
  for (int i = 0; i < s->n; i++) {
    if (i == s->rank) continue;
    av_code c = read_process(t, s->procs[i], host, sizeof host, &s->live_check[i], &s->pid[i],
                             &s->start[i], d);
    if (c != AV_OK) return c;
    if (same && strcmp(host, t->host) != 0) {
      same = false;
      snprintf(s->why, sizeof s->why,
               "process %d is on another host or network namespace (%.150s; this process: %.150s)",
               s->procs[i], host, t->host);
    }
  }
  if (!same) {
    s->mode = SET_OTHER;
    return AV_OK;
  }
  char base_key[160], key[200], name[64] = "-", nonce[40] = "-", value[256];
  set_name(s->procs, s->n, name, sizeof name); /* reused below for the segment name */
  snprintf(base_key, sizeof base_key, "%sshm/set/%s/", t->prefix, name);
  s->chunk = chunk_for(s->n);
  size_t sizes_at, data_at;
  s->bytes = layout(s->n, s->chunk, &sizes_at, &data_at);
  bool mapped = false, created = false;
  snprintf(key, sizeof key, "%ssegment", base_key);
  if (s->rank == 0) {
    created = mapped = create_segment(s, name, sizeof name, nonce);
    if (!mapped) snprintf(name, sizeof name, "-");
    snprintf(value, sizeof value, "anvil-shm-segment 1 %s %s", name, nonce);
    av_code c = t->kv.put(t->kv.ctx, key, value, strlen(value), d);
    if (c != AV_OK) {
      if (created) shm_unlink(name);
      unmap(s);
      return c;
    }
  } else {
    char *v = NULL;
    size_t vs = 0;
    av_code c = t->kv.get(t->kv.ctx, key, t->timeout_ms, &v, &vs, d);
    if (c != AV_OK) return c;
    char text[256];
    int used = 0;
    bool ok = vs < sizeof text && memchr(v, '\0', vs) == NULL;
    if (ok) {
      memcpy(text, v, vs);
      text[vs] = '\0';
      ok = sscanf(text, "anvil-shm-segment 1 %63s %39s%n", name, nonce, &used) == 2 &&
           (size_t)used == vs;
    }
    free(v);
    if (!ok)
      return av_diag_set(d, AV_DATA_LOSS,
                         "process %d published a malformed entry under '%s' in the key-value store",
                         s->procs[0], key);
    if (strcmp(name, "-") == 0)
      snprintf(s->why, sizeof s->why, "process %d could not make a shared-memory segment",
               s->procs[0]);
    else if (strncmp(name, "/anvil-", 7) != 0 || strchr(name + 1, '/'))
      return av_diag_set(d, AV_DATA_LOSS, "process %d published an unexpected segment name",
                         s->procs[0]);
    else
      mapped = open_segment(s, name, nonce);
  }
  snprintf(key, sizeof key, "%sok/%d", base_key, s->rank);
  av_code c = t->kv.put(t->kv.ctx, key, mapped ? "1" : "0", 1, d);
  bool all = mapped;
  for (int i = 0; c == AV_OK && i < s->n; i++) {
    if (i == s->rank) continue;
    snprintf(key, sizeof key, "%sok/%d", base_key, i);
    char *v = NULL;
    size_t vs = 0;
    c = t->kv.get(t->kv.ctx, key, t->timeout_ms, &v, &vs, d);
    if (c != AV_OK) break;
    bool yes = vs == 1 && v[0] == '1';
    if (!yes && all)
      snprintf(s->why, sizeof s->why, "process %d could not map the shared-memory segment",
               s->procs[i]);
    all = all && yes;
    free(v);
  }
  if (created) shm_unlink(name); /* every member mapped it or gave up on it */
  if (c != AV_OK || !all) unmap(s);
  if (c != AV_OK) return c;
  s->mode = all ? SET_SHM : SET_OTHER;
  return AV_OK;
}

static void free_set(shm_set *s) {
  unmap(s);
  free(s->procs);
  free(s->live_check);
  free(s->pid);
  free(s->start);
  free(s);
}

/* The set of `procs`, made (and agreed on) on first use. NULL with `d` set on failure. */
static shm_set *set_for(shm_transport *t, const int *procs, int nprocs, av_diag *d) {
  for (shm_set *s = t->sets; s; s = s->next)
    if (s->n == nprocs && memcmp(s->procs, procs, (size_t)nprocs * sizeof *procs) == 0) return s;
  int rank = -1;
  for (int i = 0; i < nprocs; i++)
    if (procs[i] == t->me) rank = i;
  if (rank < 0 || nprocs < 2) {
    av_diag_set(d, AV_INTERNAL, "shm: process %d is not in an exchange of %d processes", t->me,
                nprocs);
    return NULL;
  }
  shm_set *s = calloc(1, sizeof *s);
  if (s) {
    s->procs = malloc((size_t)nprocs * sizeof *s->procs);
    s->live_check = calloc((size_t)nprocs, sizeof *s->live_check);
    s->pid = calloc((size_t)nprocs, sizeof *s->pid);
    s->start = calloc((size_t)nprocs, sizeof *s->start);
  }
  if (!s || !s->procs || !s->live_check || !s->pid || !s->start) {
    if (s) free_set(s);
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "shm: out of memory");
    return NULL;
  }
  memcpy(s->procs, procs, (size_t)nprocs * sizeof *procs);
  s->n = nprocs;
  s->rank = rank;
  if (setup_set(t, s, d) != AV_OK) {
    free_set(s);
    return NULL;
  }
  s->next = t->sets;
  t->sets = s;
  return s;
}

/* ------------------------------------------------------------------ steps */

static shm_member *member(shm_set *s, int i) { return &s->members[i]; }

static unsigned char *buffer(shm_set *s, int i) {
  return s->data + ((size_t)i * 2 + (size_t)(s->buffers & 1)) * s->chunk;
}

static bool reached(unsigned step, unsigned target) { return (int)(step - target) >= 0; }

/* Breaks the set in every member (they stop waiting at once), and here for good. */
static av_code break_set(shm_set *s, unsigned why, av_diag *d) {
  if (s->mode == SET_SHM) {
    unsigned expected = 0;
    atomic_compare_exchange_strong(&s->hdr->broken, &expected,
                                   ((unsigned)(s->rank + 1) << 2) | why);
    for (int i = 0; i < s->n; i++) futex_wake(&member(s, i)->step);
  }
  s->mode = SET_FAILED;
  snprintf(s->why, sizeof s->why, "%.399s", d->msg);
  return d->code;
}

static const char *broken_text(unsigned why) {
  switch (why) {
    case BROKEN_MISMATCH: return "found that the processes run different operations";
    case BROKEN_CLOSED: return "closed its client";
    default: return "failed in an exchange";
  }
}

static bool alive(shm_set *s, int i) {
  if (!s->live_check[i]) return true;
  char state = 0;
  unsigned long long start = 0;
  if (!process_stat(s->pid[i], &state, &start)) return false;
  return start == s->start[i] && state != 'Z' && state != 'X';
}

/* Waits until member i completed `target` steps. */
static av_code wait_member(shm_set *s, int i, unsigned target, int64_t deadline_ms,
                           int64_t timeout_ms, const char *what, av_diag *d) {
  shm_member *m = member(s, i);
  if (reached(atomic_load(&m->step), target)) return AV_OK;
  int64_t spin_end = now_ns() + SHM_SPIN_NS;
  for (unsigned k = 1;; k++) {
    cpu_relax();
    if (reached(atomic_load_explicit(&m->step, memory_order_acquire), target)) return AV_OK;
    if ((k & 63) == 0 && now_ns() > spin_end) break;
  }
  int64_t next_check = now_ms() + SHM_LIVENESS_MS;
  for (;;) {
    unsigned v = atomic_load(&m->step);
    if (reached(v, target)) return AV_OK;
    unsigned b = atomic_load(&s->hdr->broken);
    if (b) {
      int who = (int)(b >> 2) - 1;
      return av_diag_set(d, AV_UNAVAILABLE, "shm %s: process %d %s", what,
                         who >= 0 && who < s->n ? s->procs[who] : -1, broken_text(b & 3));
    }
    int64_t now = now_ms();
    if (now >= deadline_ms)
      return av_diag_set(d, AV_DEADLINE_EXCEEDED,
                         "shm %s: timed out after %lld ms waiting for process %d (it completed "
                         "%u steps of the %u this process reached)",
                         what, (long long)timeout_ms, s->procs[i], v, target);
    if (now >= next_check) {
      if (!alive(s, i))
        return av_diag_set(d, AV_UNAVAILABLE, "shm %s: process %d (pid %lld) has exited", what,
                           s->procs[i], s->pid[i]);
      next_check = now + SHM_LIVENESS_MS;
    }
    int64_t sleep = deadline_ms - now < SHM_SLEEP_MS ? deadline_ms - now : SHM_SLEEP_MS;
    atomic_fetch_add(&m->sleepers, 1);
    v = atomic_load(&m->step);
    if (!reached(v, target)) futex_wait(&m->step, v, sleep > 0 ? sleep : 1);
    atomic_fetch_sub(&m->sleepers, 1);
  }
}

/* Completes one more step and waits for every member to complete it too. */
static av_code step(shm_transport *t, shm_set *s, int64_t deadline_ms, const char *what,
                    av_diag *d) {
  shm_member *m = member(s, s->rank);
  s->step++;
  atomic_store(&m->step, s->step);
  if (atomic_load(&m->sleepers)) futex_wake(&m->step);
  for (int i = 0; i < s->n; i++) {
    if (i == s->rank) continue;
    av_code c = wait_member(s, i, s->step, deadline_ms, t->timeout_ms, what, d);
    if (c != AV_OK) return c;
  }
  return AV_OK;
}

static shm_op *op_of(shm_set *s, int i) { return &member(s, i)->ops[s->buffers & 1]; }

static void describe(shm_set *s, uint32_t op, uint32_t tag, uint64_t count, uint64_t elem_size,
                     uint64_t shape) {
  shm_op *m = op_of(s, s->rank);
  m->op = op;
  m->tag = tag;
  m->count = count;
  m->elem_size = elem_size;
  m->shape = shape;
}

static const char *op_name(uint32_t op) {
  return op == OP_ALL_REDUCE ? "all_reduce"
         : op == OP_ALL_GATHER ? "all_gather"
         : op == OP_ALL_TO_ALL ? "all_to_all"
                               : "an unknown operation";
}

/* After the first step of an operation: every member is in the same one. */
static av_code check_same(shm_set *s, const char *what, av_diag *d) {
  shm_op *mine = op_of(s, s->rank);
  for (int i = 0; i < s->n; i++) {
    shm_op *m = op_of(s, i);
    if (i == s->rank) continue;
    if (m->op != mine->op || m->tag != mine->tag || m->count != mine->count ||
        m->elem_size != mine->elem_size || m->shape != mine->shape) {
      av_diag_set(d, AV_INVALID_ARGUMENT,
                  "shm %s: process %d runs %s of %llu x %llu bytes (tag %u), this process %s of "
                  "%llu x %llu bytes (tag %u)",
                  what, s->procs[i], op_name(m->op), (unsigned long long)m->count,
                  (unsigned long long)m->elem_size, m->tag, op_name(mine->op),
                  (unsigned long long)mine->count, (unsigned long long)mine->elem_size, mine->tag);
      return break_set(s, BROKEN_MISMATCH, d);
    }
  }
  return AV_OK;
}

static uint64_t hash_sizes(const size_t *v, int n) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; i++) h = (h ^ (uint64_t)v[i]) * 1099511628211ull;
  return h;
}

/* The set of an operation, ready for shared memory: NULL when the operation goes to the other
 * transport (*use_other) or fails (`d` set). */
static shm_set *shm_set_of(shm_transport *t, const int *procs, int nprocs, const char *what,
                           bool *use_other, av_diag *d) {
  *use_other = false;
  shm_set *s = set_for(t, procs, nprocs, d);
  if (!s) return NULL;
  if (s->mode == SET_SHM) return s;
  if (s->mode == SET_OTHER && t->other) {
    *use_other = true;
    return NULL;
  }
  if (s->mode == SET_OTHER)
    av_diag_set(d, AV_FAILED_PRECONDITION,
                "shm %s: ANVIL_COLLECTIVES=shm needs every process on one host (use auto or "
                "gloo), but %s",
                what, s->why);
  else
    av_diag_set(d, AV_UNAVAILABLE, "shm %s: an earlier exchange of these processes failed: %s",
                what, s->why);
  return NULL;
}

static av_code failed(shm_set *s, av_diag *d) {
  return s->mode == SET_FAILED ? d->code : break_set(s, BROKEN_FAILED, d);
}

/* ------------------------------------------------------------------ operations */

static av_code shm_all_reduce(av_transport *tr, const int *procs, int nprocs, uint32_t tag,
                              const void *in, void *buf, size_t count, size_t elem_size,
                              av_reduce_fn fn, void *fn_ctx, av_diag *d) {
  shm_transport *t = self(tr);
  if (count == 0) return AV_OK;
  bool other;
  shm_set *s = shm_set_of(t, procs, nprocs, "all_reduce", &other, d);
  if (other)
    return t->other->ops->all_reduce(t->other, procs, nprocs, tag, in, buf, count, elem_size,
                                     fn, fn_ctx, d);
  if (!s) return d->code;
  if (elem_size == 0 || elem_size > s->chunk)
    return av_diag_set(d, AV_INTERNAL, "shm all_reduce: elements of %zu bytes", elem_size);
  int64_t deadline = now_ms() + t->timeout_ms;
  unsigned char *out = buf;
  const unsigned char *src = in;
  size_t per_chunk = s->chunk / elem_size, n = (size_t)s->n, r = (size_t)s->rank;
  bool direct = count * elem_size <= SHM_DIRECT_MAX;
  describe(s, OP_ALL_REDUCE, tag, count, elem_size, direct);
  /* with its operand apart from the result, a member reads its own part of each chunk from
   * there: only the parts the others reduce are copied into its buffer */
  bool own_from_src = src != out && !direct;
  for (size_t off = 0; off < count; off += per_chunk) {
    size_t e = count - off < per_chunk ? count - off : per_chunk;
    unsigned char *at = out + off * elem_size, *mine = buffer(s, s->rank);
    const unsigned char *from = src + off * elem_size;
    /* this member's part of the chunk (all of it when direct) */
    size_t lo = direct ? 0 : e * r / n, hi = direct ? e : e * (r + 1) / n;
    if (own_from_src) {
      memcpy(mine, from, lo * elem_size);
      memcpy(mine + hi * elem_size, from + hi * elem_size, (e - hi) * elem_size);
    } else {
      memcpy(mine, from, e * elem_size);
    }
    if (step(t, s, deadline, "all_reduce", d) != AV_OK) return failed(s, d);
    if (off == 0 && check_same(s, "all_reduce", d) != AV_OK) return d->code;
    if (hi > lo) { /* over every member's operand, in member order */
      size_t b = lo * elem_size;
      const unsigned char *op0 = own_from_src && r == 0 ? from : buffer(s, 0);
      const unsigned char *op1 = own_from_src && r == 1 ? from : buffer(s, 1);
      fn(fn_ctx, at + b, op0 + b, op1 + b, hi - lo);
      for (size_t q = 2; q < n; q++)
        fn(fn_ctx, at + b, at + b, (own_from_src && r == q ? from : buffer(s, (int)q)) + b,
           hi - lo);
    }
    if (!direct) {
      memcpy(mine + lo * elem_size, at + lo * elem_size, (hi - lo) * elem_size);
      if (step(t, s, deadline, "all_reduce", d) != AV_OK) return failed(s, d);
      for (size_t q = 0; q < n; q++) {
        if (q == r) continue;
        size_t qlo = e * q / n, qhi = e * (q + 1) / n;
        memcpy(at + qlo * elem_size, buffer(s, (int)q) + qlo * elem_size, (qhi - qlo) * elem_size);
      }
    }
    s->buffers++;
  }
  return AV_OK;
}

static av_code shm_all_gather(av_transport *tr, const int *procs, int nprocs, uint32_t tag,
                              const void *in, const size_t *bytes, void *out, av_diag *d) {
  shm_transport *t = self(tr);
  size_t total = 0, most = 0;
  for (int i = 0; i < nprocs; i++) {
    total += bytes[i];
    most = bytes[i] > most ? bytes[i] : most;
  }
  if (total == 0) return AV_OK;
  bool other;
  shm_set *s = shm_set_of(t, procs, nprocs, "all_gather", &other, d);
  if (other) return t->other->ops->all_gather(t->other, procs, nprocs, tag, in, bytes, out, d);
  if (!s) return d->code;
  int64_t deadline = now_ms() + t->timeout_ms;
  describe(s, OP_ALL_GATHER, tag, total, 1, hash_sizes(bytes, nprocs));
  const unsigned char *src = in;
  unsigned char *dst = out;
  size_t mine_at = 0;
  for (int i = 0; i < s->rank; i++) mine_at += bytes[i];
  for (size_t lo = 0; lo < most; lo += s->chunk) {
    size_t len = bytes[s->rank] > lo ? bytes[s->rank] - lo : 0;
    len = len < s->chunk ? len : s->chunk;
    memcpy(buffer(s, s->rank), src + lo, len);
    if (step(t, s, deadline, "all_gather", d) != AV_OK) return failed(s, d);
    if (lo == 0 && check_same(s, "all_gather", d) != AV_OK) return d->code;
    size_t at = 0;
    for (int q = 0; q < s->n; q++) {
      size_t ql = bytes[q] > lo ? bytes[q] - lo : 0;
      ql = ql < s->chunk ? ql : s->chunk;
      if (q != s->rank) memcpy(dst + at + lo, buffer(s, q), ql);
      else if (dst + mine_at + lo != src + lo) memmove(dst + mine_at + lo, src + lo, ql);
      at += bytes[q];
    }
    s->buffers++;
  }
  return AV_OK;
}

static av_code shm_all_to_all(av_transport *tr, const int *procs, int nprocs, uint32_t tag,
                              const void *in, const size_t *send_bytes, void *out,
                              const size_t *recv_bytes, av_diag *d) {
  shm_transport *t = self(tr);
  bool other;
  shm_set *s = shm_set_of(t, procs, nprocs, "all_to_all", &other, d);
  if (other)
    return t->other->ops->all_to_all(t->other, procs, nprocs, tag, in, send_bytes, out,
                                     recv_bytes, d);
  if (!s) return d->code;
  int64_t deadline = now_ms() + t->timeout_ms;
  size_t n = (size_t)s->n, r = (size_t)s->rank, piece = s->chunk / n;
  describe(s, OP_ALL_TO_ALL, tag, n, 1, 0);
  uint64_t *sizes = s->sizes + (s->buffers & 1) * n * n, *my_sizes = sizes + r * n;
  for (size_t q = 0; q < n; q++) my_sizes[q] = send_bytes[q];
  const unsigned char *src = in;
  unsigned char *dst = out;
  uint64_t most = 0;
  for (size_t round = 0, rounds = 1; round < rounds; round++) {
    size_t lo = round * piece, send_at = 0;
    unsigned char *mine = buffer(s, s->rank);
    for (size_t q = 0; q < n; q++) {
      size_t len = send_bytes[q] > lo ? send_bytes[q] - lo : 0;
      memcpy(mine + q * piece, src + send_at + lo, len < piece ? len : piece);
      send_at += send_bytes[q];
    }
    if (step(t, s, deadline, "all_to_all", d) != AV_OK) return failed(s, d);
    if (round == 0) {
      if (check_same(s, "all_to_all", d) != AV_OK) return d->code;
      for (size_t p = 0; p < n; p++) {
        if (sizes[p * n + r] != recv_bytes[p]) {
          av_diag_set(d, AV_INVALID_ARGUMENT,
                      "shm all_to_all: process %d sends %llu bytes to this process, which "
                      "expects %zu",
                      s->procs[p], (unsigned long long)sizes[p * n + r], recv_bytes[p]);
          return break_set(s, BROKEN_MISMATCH, d);
        }
        for (size_t q = 0; q < n; q++) most = sizes[p * n + q] > most ? sizes[p * n + q] : most;
      }
      rounds = most ? (size_t)((most + piece - 1) / piece) : 1;
    }
    size_t recv_at = 0;
    for (size_t p = 0; p < n; p++) {
      size_t len = recv_bytes[p] > lo ? recv_bytes[p] - lo : 0;
      memcpy(dst + recv_at + lo, buffer(s, (int)p) + r * piece, len < piece ? len : piece);
      recv_at += recv_bytes[p];
    }
    s->buffers++;
  }
  return AV_OK;
}

static void shm_destroy(av_transport *tr) {
  shm_transport *t = self(tr);
  for (shm_set *s = t->sets, *next; s; s = next) {
    next = s->next;
    if (s->mode == SET_SHM) { /* members still waiting on this process stop now */
      unsigned expected = 0;
      atomic_compare_exchange_strong(&s->hdr->broken, &expected,
                                     ((unsigned)(s->rank + 1) << 2) | BROKEN_CLOSED);
      for (int i = 0; i < s->n; i++) futex_wake(&member(s, i)->step);
    }
    free_set(s);
  }
  if (t->other) t->other->ops->destroy(t->other);
  free(t);
}

static const av_transport_ops shm_ops = {"shm", shm_all_reduce, shm_all_gather, shm_all_to_all,
                                         shm_destroy};

av_transport *av_transport_shm_new(const av_kv_store *kv, const av_transport_config *cfg,
                                   av_transport *between_hosts, av_diag *d) {
  shm_transport *t = calloc(1, sizeof *t);
  if (!t) {
    if (between_hosts) between_hosts->ops->destroy(between_hosts);
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "shm: out of memory");
    return NULL;
  }
  t->base.ops = &shm_ops;
  t->kv = *kv;
  t->other = between_hosts;
  t->me = cfg->process_index;
  t->timeout_ms = cfg->timeout_ms;
  snprintf(t->prefix, sizeof t->prefix, "%s", cfg->key_prefix ? cfg->key_prefix : "anvil/");
  identify(t);
  if (publish_self(t, d) != AV_OK) {
    shm_destroy(&t->base);
    return NULL;
  }
  return &t->base;
}
