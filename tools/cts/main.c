/* anvil-cts: PJRT plugin conformance test suite — command line, runner, crash isolation, report.
 *
 *   anvil-cts PLUGIN.so [--json FILE] [--filter SUBSTR] [--list] [--timeout SECONDS]
 *
 * The plugin is dlopen'ed and GetPjrtApi called once in the parent (after a crash-isolated
 * probe). Each check then runs in a forked child, which sends its status and message back
 * through a pipe; the parent kills it (SIGKILL) when it overruns the timeout. A child killed by a
 * signal is a FAIL naming the signal, so one bad check never stops the suite. The last line is
 * "N passed, M failed, K skipped" (UNSUPPORTED counts as skipped) and the exit status is 0 iff
 * nothing failed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cts.h"

/* In AddressSanitizer builds LeakSanitizer is there to ask: --leak-check is then the default. */
#if defined(__SANITIZE_ADDRESS__)
#define CTS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CTS_ASAN 1
#endif
#endif
#ifndef CTS_ASAN
#define CTS_ASAN 0
#endif

#define CTS_ENTRY(name, fn, needs, what) CTS_CHECK(fn);
#include "checks.def"
#undef CTS_ENTRY

typedef struct {
  const char *name;
  cts_check_fn fn;
  cts_needs needs;
  const char *what;
} cts_check;

static const cts_check kChecks[] = {
#define CTS_ENTRY(name, fn, needs, what) {name, fn, CTS_NEEDS_##needs, what},
#include "checks.def"
#undef CTS_ENTRY
};
enum { kNumChecks = sizeof kChecks / sizeof kChecks[0] };

/* The checks whose outcome gates the others (see cts_needs). */
static const char kClientProbe[] = "client.create_destroy";
static const char kCompileProbe[] = "compile.probe";

typedef struct {
  cts_status status;
  char msg[2048];
  double ms;
} cts_result;

typedef struct {
  const char *plugin_path;
  const char *json_path;
  const char *filter;
  bool list;
  bool leak_check;
  unsigned timeout_s;
} cts_options;

static const char *status_name(cts_status s) {
  switch (s) {
    case CTS_PASS: return "PASS";
    case CTS_FAIL: return "FAIL";
    case CTS_UNSUPPORTED: return "UNSUPPORTED";
    default: return "SKIPPED";
  }
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    c += w;
    n -= (size_t)w;
  }
}

/* Child side: initialize the plugin, run one check, send [status byte][message] and _exit.
 * With leak_check a passing check ends with exit() instead, so that a leak checker (LeakSanitizer
 * in sanitizer builds) runs and its nonzero exit status turns the PASS into a FAIL. */
static void run_child(int fd, const PJRT_Api *api, const cts_check *c, bool leak_check) {
  dup2(STDERR_FILENO, STDOUT_FILENO); /* plugin chatter must not mix with the report */
  cts_ctx t;
  memset(&t, 0, sizeof t);
  t.api = api;
  cts_status s = cts_plugin_initialize(&t);
  if (s == CTS_PASS) s = c->fn(&t);
  unsigned char sb = (unsigned char)s;
  write_all(fd, &sb, 1);
  write_all(fd, t.msg, strnlen(t.msg, sizeof t.msg));
  if (leak_check && s == CTS_PASS) {
    close(fd);
    exit(0);
  }
  _exit(0);
}

static void run_isolated(const PJRT_Api *api, const cts_check *c, const cts_options *o,
                         cts_result *r) {
  unsigned timeout_s = o->timeout_s;
  memset(r, 0, sizeof *r);
  double start = now_ms();
  int fds[2];
  if (pipe(fds) != 0) {
    r->status = CTS_FAIL;
    snprintf(r->msg, sizeof r->msg, "runner: pipe failed: %s", strerror(errno));
    return;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    run_child(fds[1], api, c, o->leak_check);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    r->status = CTS_FAIL;
    snprintf(r->msg, sizeof r->msg, "runner: fork failed: %s", strerror(errno));
    return;
  }
  /* Read the result until EOF (the child exited) or the deadline. */
  char buf[1 + sizeof r->msg];
  size_t got = 0;
  bool timed_out = false;
  double deadline = start + timeout_s * 1000.0;
  for (;;) {
    double left = deadline - now_ms();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    int pr = poll(&pfd, 1, (int)left + 1);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue; /* re-checks the deadline */
    ssize_t n = read(fds[0], buf + got, sizeof buf - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
    if (got == sizeof buf - 1) break;
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  r->ms = now_ms() - start;
  if (timed_out) {
    r->status = CTS_FAIL;
    snprintf(r->msg, sizeof r->msg, "timed out after %u s (hang or deadlock)", timeout_s);
    return;
  }
  if (WIFSIGNALED(ws)) {
    int sig = WTERMSIG(ws);
    r->status = CTS_FAIL;
    snprintf(r->msg, sizeof r->msg, "crashed with signal %d (SIG%s: %s)", sig,
             sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", strsignal(sig));
    return;
  }
  if (got == 0) {
    r->status = CTS_FAIL;
    snprintf(r->msg, sizeof r->msg, "check process exited with status %d without a result",
             WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    return;
  }
  r->status = buf[0] <= CTS_SKIP ? (cts_status)buf[0] : CTS_FAIL;
  buf[got] = 0;
  snprintf(r->msg, sizeof r->msg, "%s", buf + 1);
  if (r->status == CTS_PASS && WIFEXITED(ws) && WEXITSTATUS(ws) != 0) {
    r->status = CTS_FAIL;
    snprintf(r->msg, sizeof r->msg,
             "passed, but the process exited with status %d (leak check: see stderr)",
             WEXITSTATUS(ws));
  }
}

/* dlopen + GetPjrtApi in a child first, so that a plugin crashing in its constructor or in
 * GetPjrtApi is reported instead of killing the suite. */
static bool probe_load(const char *path, char *err, size_t n) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(120);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) _exit(2);
    const PJRT_Api *(*get)(void) = (const PJRT_Api *(*)(void))dlsym(h, "GetPjrtApi");
    if (!get) _exit(3);
    _exit(get() ? 0 : 4);
  }
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(ws)) {
    snprintf(err, n, "loading the plugin crashed with SIG%s",
             sigabbrev_np(WTERMSIG(ws)) ? sigabbrev_np(WTERMSIG(ws)) : "?");
    return false;
  }
  int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  if (code == 4) snprintf(err, n, "GetPjrtApi returned NULL");
  if (code == 3) snprintf(err, n, "the plugin does not export GetPjrtApi");
  /* code 2: dlopen failed; the parent reports dlerror() itself. */
  return code == 0 || code == 2;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n", f);
    else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static int write_json(const cts_options *o, const PJRT_Api *api, const cts_result *res,
                      const bool *ran, int pass, int fail, int skip) {
  FILE *f = fopen(o->json_path, "w");
  if (!f) {
    fprintf(stderr, "anvil-cts: cannot write %s: %s\n", o->json_path, strerror(errno));
    return 1;
  }
  fprintf(f, "{\n  \"plugin\": ");
  json_string(f, o->plugin_path);
  if (api)
    fprintf(f, ",\n  \"pjrt_api_version\": \"%d.%d\"", api->pjrt_api_version.major_version,
            api->pjrt_api_version.minor_version);
  fprintf(f, ",\n  \"suite_pjrt_api_version\": \"%d.%d\"", PJRT_API_MAJOR, PJRT_API_MINOR);
  fprintf(f, ",\n  \"summary\": {\"passed\": %d, \"failed\": %d, \"skipped\": %d},\n", pass, fail,
          skip);
  fprintf(f, "  \"checks\": [");
  bool first = true;
  for (int i = 0; i < kNumChecks; i++) {
    if (!ran[i]) continue;
    fprintf(f, "%s\n    {\"name\": ", first ? "" : ",");
    first = false;
    json_string(f, kChecks[i].name);
    fprintf(f, ", \"status\": \"%s\", \"message\": ", status_name(res[i].status));
    json_string(f, res[i].msg);
    fprintf(f, ", \"duration_ms\": %.3f}", res[i].ms);
  }
  fprintf(f, "\n  ]\n}\n");
  return fclose(f) == 0 ? 0 : 1;
}

static void usage(void) {
  fprintf(stderr,
          "usage: anvil-cts PLUGIN.so [--json FILE] [--filter SUBSTR] [--list] [--timeout S]\n"
          "                 [--leak-check | --no-leak-check]\n"
          "Runs the PJRT C API conformance checks against any PJRT plugin. --leak-check (the\n"
          "default in AddressSanitizer builds) ends passing checks with exit() so that\n"
          "LeakSanitizer can turn a leak into a FAIL.\n");
}

static bool parse_args(int argc, char **argv, cts_options *o) {
  memset(o, 0, sizeof *o);
  o->timeout_s = 60;
  o->leak_check = CTS_ASAN;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--list")) o->list = true;
    else if (!strcmp(a, "--leak-check")) o->leak_check = true;
    else if (!strcmp(a, "--no-leak-check")) o->leak_check = false;
    else if (!strcmp(a, "--json") && i + 1 < argc) o->json_path = argv[++i];
    else if (!strcmp(a, "--filter") && i + 1 < argc) o->filter = argv[++i];
    else if (!strcmp(a, "--timeout") && i + 1 < argc) o->timeout_s = (unsigned)atoi(argv[++i]);
    else if (a[0] != '-' && !o->plugin_path) o->plugin_path = a;
    else return false;
  }
  if (o->timeout_s == 0) o->timeout_s = 60;
  return o->list || o->plugin_path;
}

int main(int argc, char **argv) {
  cts_options o;
  if (!parse_args(argc, argv, &o)) {
    usage();
    return 2;
  }
  if (o.list) {
    for (int i = 0; i < kNumChecks; i++) printf("%-40s %s\n", kChecks[i].name, kChecks[i].what);
    return 0;
  }
  char err[512] = "";
  if (!probe_load(o.plugin_path, err, sizeof err)) {
    printf("FAIL  api.load: %s\n0 passed, 1 failed, 0 skipped\n", err);
    return 1;
  }
  void *h = dlopen(o.plugin_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("FAIL  api.load: dlopen failed: %s\n0 passed, 1 failed, 0 skipped\n", dlerror());
    return 1;
  }
  const PJRT_Api *(*get)(void) = (const PJRT_Api *(*)(void))dlsym(h, "GetPjrtApi");
  const PJRT_Api *api = get ? get() : NULL;
  if (!api) {
    printf("FAIL  api.load: %s\n0 passed, 1 failed, 0 skipped\n",
           get ? "GetPjrtApi returned NULL" : "the plugin does not export GetPjrtApi");
    return 1;
  }
  printf("plugin %s: PJRT C API %d.%d (PJRT_Api.struct_size %zu; this suite knows %d.%d)\n",
         o.plugin_path, api->pjrt_api_version.major_version, api->pjrt_api_version.minor_version,
         api->struct_size, PJRT_API_MAJOR, PJRT_API_MINOR);
  /* The checks call the first 90 slots (present in every released version) directly. */
  if (api->struct_size < offsetof(PJRT_Api, PJRT_Compile) + sizeof(void *)) {
    printf("FAIL  api.version: PJRT_Api.struct_size %zu does not even cover the first 90 "
           "functions\n0 passed, 1 failed, 0 skipped\n",
           api->struct_size);
    return 1;
  }

  cts_result *res = calloc(kNumChecks, sizeof *res);
  bool *ran = calloc(kNumChecks, sizeof *ran);
  if (!res || !ran) {
    fprintf(stderr, "anvil-cts: out of memory\n");
    return 2;
  }
  cts_status client_gate = CTS_PASS, compile_gate = CTS_PASS;
  int pass = 0, fail = 0, skip = 0;
  for (int i = 0; i < kNumChecks; i++) {
    const cts_check *c = &kChecks[i];
    bool is_client_probe = !strcmp(c->name, kClientProbe);
    bool is_compile_probe = !strcmp(c->name, kCompileProbe);
    bool wanted = !o.filter || strstr(c->name, o.filter);
    if (!wanted && !is_client_probe && !is_compile_probe) continue;
    cts_result *r = &res[i];
    if (c->needs >= CTS_NEEDS_CLIENT && client_gate != CTS_PASS) {
      r->status = CTS_SKIP;
      snprintf(r->msg, sizeof r->msg, "needs a client (%s: %s)", kClientProbe,
               status_name(client_gate));
    } else if (c->needs >= CTS_NEEDS_COMPILE && compile_gate != CTS_PASS) {
      r->status = CTS_SKIP;
      snprintf(r->msg, sizeof r->msg, "needs a working compile (%s: %s)", kCompileProbe,
               status_name(compile_gate));
    } else {
      run_isolated(api, c, &o, r);
    }
    if (is_client_probe) client_gate = r->status;
    if (is_compile_probe) compile_gate = r->status;
    if (!wanted) continue;
    ran[i] = true;
    if (r->status == CTS_PASS) pass++;
    else if (r->status == CTS_FAIL) fail++;
    else skip++;
    printf("%-11s %s (%.0f ms)%s%s\n", status_name(r->status), c->name, r->ms,
           r->msg[0] ? ": " : "", r->msg);
    fflush(stdout);
  }
  int rc = 0;
  if (o.json_path) rc = write_json(&o, api, res, ran, pass, fail, skip);
  printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
  free(res);
  free(ran);
  return (fail || rc) ? 1 : 0;
}
