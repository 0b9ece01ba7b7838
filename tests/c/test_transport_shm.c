/* The same-host shared-memory transport (runtime/transport_shm.c), driven directly: threads
 * stand in for processes, each with its own transport over one in-memory key-value store.
 * Results are checked against sums computed here; mismatched operations, a peer that stops
 * coming, a peer that closes, hostile store entries and peers on another host must give
 * errors within the timeout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/transport.h"

/* ------------------------------------------------------ an in-memory key-value store */

typedef struct entry {
  char *key, *value;
  size_t size;
  struct entry *next;
} entry;

static pthread_mutex_t kv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kv_cv = PTHREAD_COND_INITIALIZER;
static entry *kv_head;

static void kv_clear(void) {
  pthread_mutex_lock(&kv_mu);
  for (entry *e = kv_head, *n; e; e = n) {
    n = e->next;
    free(e->key);
    free(e->value);
    free(e);
  }
  kv_head = NULL;
  pthread_mutex_unlock(&kv_mu);
}

static entry *kv_find(const char *key) {
  for (entry *e = kv_head; e; e = e->next)
    if (strcmp(e->key, key) == 0) return e;
  return NULL;
}

static av_code kv_put(void *ctx, const char *key, const void *value, size_t size, av_diag *d) {
  (void)ctx;
  (void)d;
  entry *e = calloc(1, sizeof *e);
  e->key = strdup(key);
  e->value = malloc(size + 1);
  memcpy(e->value, value, size);
  e->size = size;
  pthread_mutex_lock(&kv_mu);
  e->next = kv_head;
  kv_head = e;
  pthread_cond_broadcast(&kv_cv);
  pthread_mutex_unlock(&kv_mu);
  return AV_OK;
}

static av_code kv_get(void *ctx, const char *key, int64_t timeout_ms, char **value, size_t *size,
                      av_diag *d) {
  (void)ctx;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&kv_mu);
  entry *e;
  int rc = 0;
  while (!(e = kv_find(key)) && rc == 0) rc = pthread_cond_timedwait(&kv_cv, &kv_mu, &until);
  if (e) {
    *value = malloc(e->size + 1);
    memcpy(*value, e->value, e->size);
    *size = e->size;
  }
  pthread_mutex_unlock(&kv_mu);
  return e ? AV_OK : av_diag_set(d, AV_DEADLINE_EXCEEDED, "no key %s", key);
}

static av_code kv_try_get(void *ctx, const char *key, bool *found, char **value, size_t *size,
                          av_diag *d) {
  (void)ctx;
  (void)d;
  pthread_mutex_lock(&kv_mu);
  entry *e = kv_find(key);
  *found = e != NULL;
  if (e) {
    *value = malloc(e->size + 1);
    memcpy(*value, e->value, e->size);
    *size = e->size;
  }
  pthread_mutex_unlock(&kv_mu);
  return AV_OK;
}

static const av_kv_store store = {NULL, kv_get, kv_try_get, kv_put};

static void put_text(const char *key, const char *value) {
  av_diag d;
  av_diag_init(&d);
  kv_put(NULL, key, value, strlen(value), &d);
}

/* ------------------------------------------------------------------ helpers */

/* Whether this machine has POSIX shared memory (some sandboxes have no /dev/shm). */
static bool shm_works(void) {
  char name[64];
  snprintf(name, sizeof name, "/anvil-test-%ld", (long)getpid());
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return false;
  close(fd);
  shm_unlink(name);
  return true;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static av_transport *open_transport(int me, int n, int64_t timeout_ms, av_transport *other) {
  av_transport_config cfg = {me, n, timeout_ms, NULL, NULL, "t/"};
  av_diag d;
  av_diag_init(&d);
  av_transport *t = av_transport_shm_new(&store, &cfg, other, &d);
  assert_non_null(t);
  return t;
}

static void add_i32(void *ctx, void *out, const void *a, const void *b, size_t n) {
  (void)ctx;
  int32_t *o = out;
  const int32_t *x = a, *y = b;
  for (size_t i = 0; i < n; i++) o[i] = x[i] + y[i];
}

/* 16-byte elements: two independent 64-bit sums */
static void add_pairs(void *ctx, void *out, const void *a, const void *b, size_t n) {
  (void)ctx;
  uint64_t *o = out;
  const uint64_t *x = a, *y = b;
  for (size_t i = 0; i < 2 * n; i++) o[i] = x[i] + y[i];
}

static int32_t value_of(int member, size_t i) { return (int32_t)((i * (size_t)(member + 3)) % 1009) - 500; }

enum { MEMBERS = 3 };
static const int all3[MEMBERS] = {0, 1, 2};

typedef struct member_job {
  int me;
  av_transport *t;
  int failures;
  char why[512];
} member_job;

static void fail_job(member_job *j, const char *what, const av_diag *d) {
  if (!j->failures++) snprintf(j->why, sizeof j->why, "%s: %.400s", what, d ? d->msg : "wrong result");
}

/* Every operation with sizes that cross chunks, parts that do not divide, and zeros. */
static void *run_operations(void *arg) {
  member_job *j = arg;
  static const size_t counts[] = {1, 7, 1000, 40000, 300001, 1100000};
  for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
    size_t n = counts[c];
    /* in place, and (odd cases) from a separate operand into a buffer of garbage */
    int32_t *buf = malloc(n * sizeof *buf), *in = c % 2 ? malloc(n * sizeof *in) : buf;
    for (size_t i = 0; i < n; i++) in[i] = value_of(j->me, i);
    if (in != buf) memset(buf, 0x5a, n * sizeof *buf);
    av_diag d;
    av_diag_init(&d);
    if (j->t->ops->all_reduce(j->t, all3, MEMBERS, 7, in, buf, n, 4, add_i32, NULL, &d) != AV_OK)
      fail_job(j, "all_reduce", &d);
    for (size_t i = 0; i < n && !j->failures; i++)
      if (buf[i] != value_of(0, i) + value_of(1, i) + value_of(2, i)) fail_job(j, "all_reduce", NULL);
    if (in != buf) free(in);
    free(buf);
  }
  {
    size_t n = 90001;
    uint64_t *buf = malloc(n * 16);
    for (size_t i = 0; i < 2 * n; i++) buf[i] = i * 1000003u + (uint64_t)j->me;
    av_diag d;
    av_diag_init(&d);
    if (j->t->ops->all_reduce(j->t, all3, MEMBERS, 8, buf, buf, n, 16, add_pairs, NULL, &d) != AV_OK)
      fail_job(j, "all_reduce of 16-byte elements", &d);
    for (size_t i = 0; i < 2 * n && !j->failures; i++)
      if (buf[i] != 3 * (i * 1000003u) + 3) fail_job(j, "all_reduce of 16-byte elements", NULL);
    free(buf);
  }
  {
    const size_t bytes[MEMBERS] = {0, 5, 2500001};
    size_t total = bytes[0] + bytes[1] + bytes[2], at = 0;
    unsigned char *out = malloc(total), *in = malloc(bytes[j->me] + 1);
    for (size_t i = 0; i < bytes[j->me]; i++) in[i] = (unsigned char)(i * 7 + (size_t)j->me);
    av_diag d;
    av_diag_init(&d);
    if (j->t->ops->all_gather(j->t, all3, MEMBERS, 9, in, bytes, out, &d) != AV_OK)
      fail_job(j, "all_gather", &d);
    for (int q = 0; q < MEMBERS && !j->failures; q++) {
      for (size_t i = 0; i < bytes[q]; i++)
        if (out[at + i] != (unsigned char)(i * 7 + (size_t)q)) {
          fail_job(j, "all_gather", NULL);
          break;
        }
      at += bytes[q];
    }
    free(out);
    free(in);
  }
  {
    /* sends[p][q]: bytes member p sends to member q */
    static const size_t sends[MEMBERS][MEMBERS] = {{3, 0, 700000}, {1, 400001, 2}, {0, 0, 5}};
    size_t send_total = 0, recv_total = 0, recv[MEMBERS];
    for (int q = 0; q < MEMBERS; q++) {
      send_total += sends[j->me][q];
      recv[q] = sends[q][j->me];
      recv_total += recv[q];
    }
    unsigned char *in = malloc(send_total + 1), *out = malloc(recv_total + 1);
    size_t at = 0;
    for (int q = 0; q < MEMBERS; q++)
      for (size_t i = 0; i < sends[j->me][q]; i++)
        in[at++] = (unsigned char)(i * 13 + (size_t)(j->me * 3 + q));
    av_diag d;
    av_diag_init(&d);
    if (j->t->ops->all_to_all(j->t, all3, MEMBERS, 10, in, sends[j->me], out, recv, &d) != AV_OK)
      fail_job(j, "all_to_all", &d);
    at = 0;
    for (int p = 0; p < MEMBERS && !j->failures; p++)
      for (size_t i = 0; i < recv[p]; i++, at++)
        if (out[at] != (unsigned char)(i * 13 + (size_t)(p * 3 + j->me))) {
          fail_job(j, "all_to_all", NULL);
          break;
        }
    free(in);
    free(out);
  }
  return NULL;
}

static void test_operations_match_sums(void **state) {
  (void)state;
  if (!shm_works()) skip();
  kv_clear();
  member_job jobs[MEMBERS];
  pthread_t th[MEMBERS];
  for (int i = 0; i < MEMBERS; i++) {
    jobs[i] = (member_job){.me = i, .t = open_transport(i, MEMBERS, 20000, NULL)};
    pthread_create(&th[i], NULL, run_operations, &jobs[i]);
  }
  for (int i = 0; i < MEMBERS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < MEMBERS; i++) {
    if (jobs[i].failures) fail_msg("member %d: %s", i, jobs[i].why);
    jobs[i].t->ops->destroy(jobs[i].t);
  }
}

/* ------------------------------------------------------------------ failures */

typedef struct fail_job_args {
  av_transport *t;
  size_t count;
  bool second; /* run a second all_reduce */
  bool close_instead; /* destroy the transport instead of the second */
  av_code first, code;
  char msg[AV_DIAG_MAX];
  int64_t ms;
} fail_job_args;

static const int pair[2] = {0, 1};

static void *reduce_twice(void *arg) {
  fail_job_args *a = arg;
  int32_t buf[16] = {0};
  av_diag d;
  av_diag_init(&d);
  a->first = a->t->ops->all_reduce(a->t, pair, 2, 1, buf, buf, 4, 4, add_i32, NULL, &d);
  if (a->close_instead) {
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    a->t->ops->destroy(a->t);
    a->t = NULL;
    return NULL;
  }
  if (!a->second) return NULL;
  av_diag_init(&d);
  int64_t t0 = now_ms();
  a->code = a->t->ops->all_reduce(a->t, pair, 2, 2, buf, buf, a->count, 4, add_i32, NULL, &d);
  a->ms = now_ms() - t0;
  snprintf(a->msg, sizeof a->msg, "%s", d.msg);
  return NULL;
}

static void run_pair(fail_job_args *a, fail_job_args *b, int64_t timeout_ms) {
  kv_clear();
  a->t = open_transport(0, 2, timeout_ms, NULL);
  b->t = open_transport(1, 2, timeout_ms, NULL);
  pthread_t ta, tb;
  pthread_create(&ta, NULL, reduce_twice, a);
  pthread_create(&tb, NULL, reduce_twice, b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  assert_int_equal(a->first, AV_OK);
  assert_int_equal(b->first, AV_OK);
}

static void test_mismatched_sizes_fail_in_both(void **state) {
  (void)state;
  if (!shm_works()) skip();
  fail_job_args a = {.count = 10, .second = true}, b = {.count = 11, .second = true};
  run_pair(&a, &b, 5000);
  assert_int_not_equal(a.code, AV_OK);
  assert_int_not_equal(b.code, AV_OK);
  assert_true(a.ms < 3000 && b.ms < 3000);
  assert_non_null(strstr(a.code == AV_INVALID_ARGUMENT ? a.msg : b.msg, "runs all_reduce of"));
  /* the set stays broken */
  int32_t buf[4] = {0};
  av_diag d;
  av_diag_init(&d);
  assert_int_not_equal(a.t->ops->all_reduce(a.t, pair, 2, 3, buf, buf, 4, 4, add_i32, NULL, &d), AV_OK);
  assert_non_null(strstr(d.msg, "earlier exchange"));
  a.t->ops->destroy(a.t);
  b.t->ops->destroy(b.t);
}

static void test_peer_that_stops_coming_times_out(void **state) {
  (void)state;
  if (!shm_works()) skip();
  fail_job_args a = {.count = 4, .second = true}, b = {.count = 4};
  run_pair(&a, &b, 400);
  assert_int_equal(a.code, AV_DEADLINE_EXCEEDED);
  assert_true(a.ms >= 350 && a.ms < 2000);
  assert_non_null(strstr(a.msg, "waiting for process 1"));
  a.t->ops->destroy(a.t);
  b.t->ops->destroy(b.t);
}

static void test_peer_that_closes_ends_the_wait(void **state) {
  (void)state;
  if (!shm_works()) skip();
  fail_job_args a = {.count = 4, .second = true}, b = {.close_instead = true};
  run_pair(&a, &b, 20000);
  assert_int_equal(a.code, AV_UNAVAILABLE);
  assert_true(a.ms < 5000);
  assert_non_null(strstr(a.msg, "process 1 closed its client"));
  a.t->ops->destroy(a.t);
}

/* ------------------------------------------------------------------ the store */

/* This process is process 1 of 2; process 0 never runs: its entries are written here. */
static av_code reduce_alone(const char *process0, const char *segment, av_transport *other,
                            av_diag *d) {
  kv_clear();
  if (process0) put_text("t/shm/process/0", process0);
  if (segment) put_text("t/shm/set/0,1/segment", segment);
  av_transport *t = open_transport(1, 2, 300, other);
  int32_t buf[4] = {0};
  av_diag_init(d);
  av_code c = t->ops->all_reduce(t, pair, 2, 1, buf, buf, 4, 4, add_i32, NULL, d);
  t->ops->destroy(t);
  return c;
}

static char *own_entry(void) {
  /* process 0's own entry, as it published it: the same host */
  kv_clear();
  av_transport *t = open_transport(0, 2, 300, NULL);
  char *v = NULL;
  size_t n = 0;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(kv_get(NULL, "t/shm/process/0", 0, &v, &n, &d), AV_OK);
  v[n] = '\0';
  t->ops->destroy(t);
  return v;
}

static void test_hostile_store_entries(void **state) {
  (void)state;
  av_diag d;
  static const char *bad[] = {"anvil-shm 1 x", "anvil-shm 2 1 1 a b", "anvil-shm 1 -5 1 a b",
                              "anvil-shm 1 5 1 a b trailing", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(reduce_alone(bad[i], NULL, NULL, &d), AV_DATA_LOSS);
    assert_non_null(strstr(d.msg, "malformed"));
  }
  /* same host, but the segment's name points elsewhere */
  char *mine = own_entry();
  static const char *segments[] = {"anvil-shm-segment 1 /etc/passwd x", "anvil-shm-segment 1 /anvil-a/b x",
                                   "anvil-shm-segment 1", "garbage"};
  for (size_t i = 0; i < sizeof segments / sizeof *segments; i++)
    assert_int_equal(reduce_alone(mine, segments[i], NULL, &d), AV_DATA_LOSS);
  /* a segment that does not exist: this process cannot map it, says so, and times out on
   * process 1's answer */
  assert_int_not_equal(reduce_alone(mine, "anvil-shm-segment 1 /anvil-nonexistent x", NULL, &d),
                       AV_OK);
  free(mine);
  /* nobody answers at all: a clear error within the timeout */
  int64_t t0 = now_ms();
  assert_int_equal(reduce_alone(NULL, NULL, NULL, &d), AV_DEADLINE_EXCEEDED);
  assert_true(now_ms() - t0 < 2000);
  assert_non_null(strstr(d.msg, "did not say which host"));
}

/* ------------------------------------------------------------------ other hosts */

typedef struct recording {
  av_transport base;
  int calls;
} recording;

static av_code rec_all_reduce(av_transport *t, const int *procs, int nprocs, uint32_t tag,
                              const void *in, void *buf, size_t count, size_t elem_size, av_reduce_fn fn,
                              void *fn_ctx, av_diag *d) {
  ((recording *)t)->calls++;
  return AV_OK;
}
static void rec_destroy(av_transport *t) { free(t); }
static const av_transport_ops rec_ops = {"recording", rec_all_reduce, NULL, NULL, rec_destroy};

static void test_other_hosts_go_to_the_other_transport(void **state) {
  (void)state;
  const char *elsewhere = "anvil-shm 1 1 1 pid:[1] another-boot,net:[1],elsewhere";
  av_diag d;
  assert_int_equal(reduce_alone(elsewhere, NULL, NULL, &d), AV_FAILED_PRECONDITION);
  assert_non_null(strstr(d.msg, "needs every process on one host"));
  assert_non_null(strstr(d.msg, "process 0 is on another host"));
  /* with a transport between hosts, it gets the operation (twice: the set is remembered) */
  kv_clear();
  put_text("t/shm/process/0", elsewhere);
  recording *r = calloc(1, sizeof *r);
  r->base.ops = &rec_ops;
  av_transport *t = open_transport(1, 2, 300, &r->base);
  int32_t buf[4] = {0};
  for (int k = 0; k < 2; k++) {
    av_diag_init(&d);
    assert_int_equal(t->ops->all_reduce(t, pair, 2, 1, buf, buf, 4, 4, add_i32, NULL, &d), AV_OK);
  }
  assert_int_equal(r->calls, 2);
  t->ops->destroy(t); /* destroys r too */

  /* one host, but process 0 could not make the segment (a full /dev/shm): the other transport */
  char *mine = own_entry();
  kv_clear();
  put_text("t/shm/process/0", mine);
  put_text("t/shm/set/0,1/segment", "anvil-shm-segment 1 - -");
  put_text("t/shm/set/0,1/ok/0", "0");
  free(mine);
  r = calloc(1, sizeof *r);
  r->base.ops = &rec_ops;
  t = open_transport(1, 2, 300, &r->base);
  av_diag_init(&d);
  assert_int_equal(t->ops->all_reduce(t, pair, 2, 1, buf, buf, 4, 4, add_i32, NULL, &d), AV_OK);
  assert_int_equal(r->calls, 1);
  t->ops->destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_operations_match_sums),
      cmocka_unit_test(test_mismatched_sizes_fail_in_both),
      cmocka_unit_test(test_peer_that_stops_coming_times_out),
      cmocka_unit_test(test_peer_that_closes_ends_the_wait),
      cmocka_unit_test(test_hostile_store_entries),
      cmocka_unit_test(test_other_hosts_go_to_the_other_transport),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  kv_clear();
  return rc;
}
