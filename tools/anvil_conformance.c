/* anvil-conformance DIR_OR_FILE...: runs StableHLO conformance tests through
 * av_program_compile / av_program_execute and reports what fails and why.
 *
 * Files: testdata-style modules (zero-argument public @main; results checked by
 * custom_call @check.expect_*), and interpret-style files split on `// -----` (each case is
 * run and counted on its own, named FILE#N). A test passes when it compiles and runs with
 * every check satisfied; cases of the interpreter's multi-process harness
 * (interpreter.run_parallel) run on several devices (conformance/parallel.c). It is skipped,
 * with the reason printed, only when it uses what anvil deliberately does not support (dynamic shapes, quantized types); everything else
 * that does not pass is a failure. Each test runs in a child process (crashes and hangs
 * become failures), unless --no-fork.
 *
 * Output: one line per failing (and skipped) test, then optionally the most common failure
 * reasons (--buckets), and last `N passed, M failed, K skipped`. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/program.h"
#include "conformance/parallel.h"
#include "util/file.h"
#include "util/split_marker.h"

enum { RESULT_PASS, RESULT_FAIL, RESULT_SKIP };
enum { REASON_MAX = 400 };

typedef struct options {
  bool fork;
  bool quiet;
  bool buckets;
  bool show_skips;
  int timeout_s;
  av_denormals denormals; /* --denormals: flush (anvil's default) or ieee */
} options;

typedef struct bucket {
  char *key;
  int count;
} bucket;

typedef struct stats {
  int passed, failed, skipped;
  bucket *b; /* failure reasons */
  int nb, capb;
  bucket *sk; /* skip reasons */
  int nsk, capsk;
} stats;

/* What anvil deliberately does not run; anything else that fails is a failure. */
static const char *skip_reason(const char *msg) {
  if (strstr(msg, "dynamic shapes are not supported")) return "dynamic shapes";
  if (strstr(msg, "!quant.") || strstr(msg, "quant.uniform")) return "quantized types";
  if (strstr(msg, "interpreter.")) return "StableHLO interpreter harness ops (interpreter.*)";
  if (strstr(msg, "check.expect_serialized_eq")) return "interpreter-only check";
  return NULL;
}

/* Compiles and runs one module; fills reason on failure/skip. */
static int run_one(const options *o, const char *text, size_t len, char *reason) {
  switch (av_conf_run_parallel(text, len, o->denormals, reason, REASON_MAX)) {
    case AV_CONF_PASS: return RESULT_PASS;
    case AV_CONF_FAIL: return RESULT_FAIL;
    case AV_CONF_SKIP: return RESULT_SKIP;
    default: break; /* an ordinary case */
  }
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, len, NULL, &d);
  if (p) av_program_set_denormals(p, o->denormals);
  if (!p) {
    const char *why = skip_reason(d.msg);
    if (why) {
      snprintf(reason, REASON_MAX, "%s", why);
      return RESULT_SKIP;
    }
    snprintf(reason, REASON_MAX, "compile: %.380s", d.msg);
    return RESULT_FAIL;
  }
  int nin = av_program_num_inputs(p), nout = av_program_num_outputs(p);
  if (!strstr(text, "check.")) {
    /* nothing to verify: such files compare printed output (FileCheck) */
    snprintf(reason, REASON_MAX, "no check ops (the test compares printed output)");
    av_program_free(p);
    return RESULT_SKIP;
  }
  av_tensor *outs = calloc((size_t)nout + 1, sizeof *outs);
  av_tensor *ins = calloc((size_t)nin + 1, sizeof *ins);
  int result = RESULT_PASS;
  if (!outs || !ins) {
    snprintf(reason, REASON_MAX, "out of memory");
    result = RESULT_FAIL;
  } else if (nin > 0) {
    snprintf(reason, REASON_MAX, "main takes %d arguments; conformance tests take none", nin);
    result = RESULT_FAIL;
  } else {
    av_code c = av_program_execute(p, 0, ins, outs, &d);
    if (c != AV_OK) {
      snprintf(reason, REASON_MAX, "run: %.380s", d.msg);
      result = RESULT_FAIL;
    } else {
      for (int i = 0; i < nout; i++) av_storage_release(outs[i].storage);
    }
  }
  free(outs);
  free(ins);
  av_program_free(p);
  return result;
}

/* Runs in a child so a crash or a hang is reported, not fatal. */
static int run_isolated(const options *o, const char *text, size_t len, char *reason) {
  if (!o->fork) return run_one(o, text, len, reason);
  int fds[2];
  if (pipe(fds) != 0) return run_one(o, text, len, reason);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return run_one(o, text, len, reason);
  }
  if (pid == 0) {
    close(fds[0]);
    alarm((unsigned)o->timeout_s);
    char r[REASON_MAX] = "";
    int res = run_one(o, text, len, r);
    char msg[REASON_MAX + 4];
    msg[0] = (char)('0' + res);
    size_t rl = strlen(r);
    memcpy(msg + 1, r, rl + 1);
    ssize_t w = write(fds[1], msg, rl + 2);
    (void)w;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  char msg[REASON_MAX + 4];
  size_t got = 0;
  for (;;) {
    ssize_t n = read(fds[0], msg + got, sizeof msg - 1 - got);
    if (n > 0) {
      got += (size_t)n;
      if (got >= sizeof msg - 1) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  close(fds[0]);
  msg[got] = '\0';
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    snprintf(reason, REASON_MAX, "%s (signal %d)", sig == SIGALRM ? "timed out" : "crashed", sig);
    return RESULT_FAIL;
  }
  if (got < 1 || msg[0] < '0' || msg[0] > '2') {
    snprintf(reason, REASON_MAX, "no result from the test process");
    return RESULT_FAIL;
  }
  snprintf(reason, REASON_MAX, "%.*s", REASON_MAX - 1, msg + 1);
  return msg[0] - '0';
}

static void count_in(bucket **b, int *n, int *cap, const char *key) {
  for (int i = 0; i < *n; i++)
    if (strcmp((*b)[i].key, key) == 0) {
      (*b)[i].count++;
      return;
    }
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 16;
    bucket *nb = realloc(*b, (size_t)nc * sizeof *nb);
    if (!nb) return;
    *b = nb;
    *cap = nc;
  }
  (*b)[*n].key = strdup(key);
  (*b)[*n].count = 1;
  if ((*b)[*n].key) (*n)++;
}

/* The bucket of a failure: its first line without the location, numbers kept. */
static void add_bucket(stats *s, const char *reason) {
  char key[160];
  size_t n = 0;
  for (const char *p = reason; *p && *p != '\n' && n < sizeof key - 1; p++) {
    if (strncmp(p, " (at ", 5) == 0) break;
    if (strncmp(p, "; first at", 10) == 0) break;
    key[n++] = *p;
  }
  key[n] = '\0';
  /* "check... failed: 3 of 400 elements differ" -> drop the counts */
  char *f = strstr(key, " failed: ");
  if (f) f[8] = '\0';
  for (int i = 0; i < s->nb; i++)
    if (strcmp(s->b[i].key, key) == 0) {
      s->b[i].count++;
      return;
    }
  if (s->nb == s->capb) {
    int cap = s->capb ? s->capb * 2 : 64;
    bucket *nb = realloc(s->b, (size_t)cap * sizeof *nb);
    if (!nb) return;
    s->b = nb;
    s->capb = cap;
  }
  s->b[s->nb].key = strdup(key);
  s->b[s->nb].count = 1;
  if (s->b[s->nb].key) s->nb++;
}

static void flatten(char *r) {
  for (char *p = r; *p; p++)
    if (*p == '\n') *p = ' ';
}

static void report(const options *o, stats *s, const char *name, int res, char *reason) {
  if (res == RESULT_PASS) {
    s->passed++;
    return;
  }
  if (res == RESULT_SKIP) s->skipped++;
  else s->failed++;
  if (res == RESULT_FAIL) add_bucket(s, reason);
  if (res == RESULT_SKIP) count_in(&s->sk, &s->nsk, &s->capsk, reason);
  flatten(reason);
  if (o->quiet || (res == RESULT_SKIP && !o->show_skips)) return;
  printf("%s %s: %s\n", res == RESULT_SKIP ? "SKIP" : "FAIL", name, reason);
}

static void run_file(const options *o, stats *s, const char *path) {
  size_t len;
  char *text = av_read_file(path, &len);
  char reason[REASON_MAX];
  if (!text) {
    snprintf(reason, sizeof reason, "cannot read: %s", strerror(errno));
    report(o, s, path, RESULT_FAIL, reason);
    return;
  }
  const char *after;
  if (!av_split_marker_find(text, &after)) {
    int res = run_isolated(o, text, len, reason);
    report(o, s, path, res, reason);
    free(text);
    return;
  }
  /* interpret-style: cases split on `// -----` markers */
  char *start = text;
  int index = 0;
  for (;;) {
    const char *found = av_split_marker_find(start, &after);
    char *next = found ? start + (found - start) : NULL;
    size_t clen = next ? (size_t)(next - start) : strlen(start);
    char *name = malloc(strlen(path) + 16);
    if (!name) break;
    sprintf(name, "%s#%d", path, index++);
    /* a case without any function (e.g. only comments) is not a test */
    char saved = start[clen];
    start[clen] = '\0';
    if (strstr(start, "func.func")) {
      int res = run_isolated(o, start, clen, reason);
      report(o, s, name, res, reason);
    }
    start[clen] = saved;
    free(name);
    if (!next) break;
    start = text + (after - text);
  }
  free(text);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void run_path(const options *o, stats *s, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    char reason[REASON_MAX];
    snprintf(reason, sizeof reason, "cannot open: %s", strerror(errno));
    report(o, s, path, RESULT_FAIL, reason);
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    run_file(o, s, path);
    return;
  }
  DIR *dir = opendir(path);
  if (!dir) return;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".mlir") != 0) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 256;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) break;
      names = nn;
    }
    names[n] = malloc(strlen(path) + l + 2);
    if (!names[n]) break;
    sprintf(names[n], "%s/%s", path, e->d_name);
    n++;
  }
  closedir(dir);
  qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    run_file(o, s, names[i]);
    free(names[i]);
  }
  free(names);
}

static int cmp_bucket(const void *a, const void *b) {
  const bucket *x = a, *y = b;
  return y->count - x->count;
}

int main(int argc, char **argv) {
  options o = {.fork = true, .timeout_s = 60};
  stats s = {0};
  int npaths = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--no-fork") == 0) o.fork = false;
    else if (strcmp(argv[i], "--quiet") == 0) o.quiet = true;
    else if (strcmp(argv[i], "--buckets") == 0) o.buckets = true;
    else if (strcmp(argv[i], "--show-skips") == 0) o.show_skips = true;
    else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) o.timeout_s = atoi(argv[++i]);
    else if (strcmp(argv[i], "--denormals") == 0 && i + 1 < argc) {
      if (!av_parse_denormals(argv[++i], &o.denormals)) {
        fprintf(stderr, "--denormals takes 'flush' or 'ieee'\n");
        return 2;
      }
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: anvil-conformance [--quiet] [--buckets] [--show-skips] [--no-fork] "
             "[--timeout S] [--denormals flush|ieee] DIR_OR_FILE...\n"
             "  --denormals ieee: exact subnormals, as the StableHLO reference interpreter\n"
             "  computes (tests/interpret, testdata-quantized); default flush, as XLA:CPU\n");
      return 0;
    } else {
      npaths++;
    }
  }
  if (npaths == 0) {
    fprintf(stderr, "usage: anvil-conformance [options] DIR_OR_FILE...\n");
    return 2;
  }
  if (o.timeout_s < 1) o.timeout_s = 60;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1] == '-') {
      if (strcmp(argv[i], "--timeout") == 0 || strcmp(argv[i], "--denormals") == 0) i++;
      continue;
    }
    run_path(&o, &s, argv[i]);
  }
  if (o.buckets && s.nb) {
    qsort(s.b, (size_t)s.nb, sizeof *s.b, cmp_bucket);
    printf("top failure reasons:\n");
    for (int i = 0; i < s.nb && i < 25; i++) printf("  %5d  %s\n", s.b[i].count, s.b[i].key);
  }
  for (int i = 0; i < s.nb; i++) free(s.b[i].key);
  free(s.b);
  if (s.nsk) {
    /* skipping is deliberate: say why */
    printf("skipped because of:\n");
    for (int i = 0; i < s.nsk; i++) printf("  %5d  %s\n", s.sk[i].count, s.sk[i].key);
  }
  for (int i = 0; i < s.nsk; i++) free(s.sk[i].key);
  free(s.sk);
  if (s.skipped)
    printf("%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped);
  else
    printf("%d passed, %d failed\n", s.passed, s.failed);
  return s.failed ? 1 : 0;
}
