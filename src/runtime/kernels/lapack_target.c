/* Compile-time side of the LAPACK custom calls: which targets exist, what operands and
 * results each takes (as jaxlib's FFI handlers declare them), and their attributes. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/kernels/lapack.h"

typedef struct routine_name {
  const char *real, *cplx; /* name after the type letter, e.g. "syevd" / "heevd" */
  av_lapack_routine routine;
} routine_name;

static const routine_name ROUTINES[] = {
    {"potrf", "potrf", AV_LAPACK_POTRF}, {"getrf", "getrf", AV_LAPACK_GETRF},
    {"geqrf", "geqrf", AV_LAPACK_GEQRF}, {"geqp3", "geqp3", AV_LAPACK_GEQP3},
    {"orgqr", "ungqr", AV_LAPACK_ORGQR}, {"ormqr", "unmqr", AV_LAPACK_ORMQR},
    {"trsm", "trsm", AV_LAPACK_TRSM},    {"gtsv", "gtsv", AV_LAPACK_GTSV},
    {"syevd", "heevd", AV_LAPACK_SYEVD}, {"gesdd", "gesdd", AV_LAPACK_GESDD},
    {"gesvd", "gesvd", AV_LAPACK_GESVD}, {"geev", "geev", AV_LAPACK_GEEV},
    {"gees", "gees", AV_LAPACK_GEES},    {"gehrd", "gehrd", AV_LAPACK_GEHRD},
    {"sytrd", "hetrd", AV_LAPACK_SYTRD},
};

bool av_lapack_target(const char *target, av_lapack_routine *routine, av_dtype *dtype) {
  static const char prefix[] = "lapack_", suffix[] = "_ffi";
  if (target && strcmp(target, "tridiagonal_solve_perturbed_ffi") == 0) {
    *routine = AV_LAPACK_GTSV_PERTURBED;
    *dtype = AV_DT_INVALID;
    return true;
  }
  if (!target || strncmp(target, prefix, sizeof prefix - 1) != 0) return false;
  const char *p = target + sizeof prefix - 1;
  size_t len = strlen(p);
  if (len < 2 + sizeof suffix - 1 || strcmp(p + len - (sizeof suffix - 1), suffix) != 0)
    return false;
  av_dtype t;
  switch (p[0]) {
    case 's': t = AV_DT_F32; break;
    case 'd': t = AV_DT_F64; break;
    case 'c': t = AV_DT_C64; break;
    case 'z': t = AV_DT_C128; break;
    default: return false;
  }
  size_t nlen = len - 1 - (sizeof suffix - 1);
  bool cplx = av_dtype_is_complex(t);
  for (size_t i = 0; i < sizeof ROUTINES / sizeof ROUTINES[0]; i++) {
    const char *name = cplx ? ROUTINES[i].cplx : ROUTINES[i].real;
    if (strlen(name) == nlen && strncmp(p + 1, name, nlen) == 0) {
      *routine = ROUTINES[i].routine;
      *dtype = t;
      return true;
    }
  }
  return false;
}

/* ------------------------------------------------------------ checking */

typedef struct checker {
  av_lapack_call *call;
  char *err;
  size_t cap;
  av_code code;
} checker;

static bool fail(checker *k, av_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool fail(checker *k, av_code code, const char *fmt, ...) {
  if (k->code == AV_OK) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->err, k->cap, fmt, ap);
    va_end(ap);
    k->code = code;
  }
  return false;
}

static av_dtype real_of(av_dtype t) {
  return t == AV_DT_C64 ? AV_DT_F32 : t == AV_DT_C128 ? AV_DT_F64 : t;
}
static av_dtype complex_of(av_dtype t) {
  return t == AV_DT_F32 ? AV_DT_C64 : t == AV_DT_F64 ? AV_DT_C128 : t;
}

/* Argument `a` must have dtype t and shape batch + trailing (ntrail of them). */
static bool expect(checker *k, const av_lapack_arg *a, const char *what, av_dtype t,
                   const av_lapack_arg *main, int nbatch, int ntrail, int64_t d0, int64_t d1) {
  if (a->dtype != t)
    return fail(k, AV_INVALID_ARGUMENT, "%s must be %s, got %s", what, av_dtype_mlir_name(t),
                av_dtype_mlir_name(a->dtype));
  if (a->rank != nbatch + ntrail)
    return fail(k, AV_INVALID_ARGUMENT, "%s must have rank %d, got %d", what, nbatch + ntrail,
                a->rank);
  for (int i = 0; i < nbatch; i++)
    if (a->dims[i] != main->dims[i])
      return fail(k, AV_INVALID_ARGUMENT, "%s batch dimension %d is %lld, expected %lld", what, i,
                  (long long)a->dims[i], (long long)main->dims[i]);
  int64_t want[2] = {d0, d1};
  for (int j = 0; j < ntrail; j++)
    if (a->dims[nbatch + j] != want[j])
      return fail(k, AV_INVALID_ARGUMENT, "%s dimension %d is %lld, expected %lld", what,
                  nbatch + j, (long long)a->dims[nbatch + j], (long long)want[j]);
  return true;
}

static bool counts(checker *k, uint32_t nin_min, uint32_t nin_max, uint32_t nout) {
  const av_lapack_call *c = k->call;
  if (c->nin < nin_min || c->nin > nin_max)
    return fail(k, AV_INVALID_ARGUMENT, "takes %u operands, got %u", nin_min, c->nin);
  if (c->nout != nout)
    return fail(k, AV_INVALID_ARGUMENT, "returns %u results, got %u", nout, c->nout);
  return true;
}

static bool layouts_valid(checker *k) {
  const av_lapack_call *c = k->call;
  for (uint32_t i = 0; i < c->nin + c->nout; i++) {
    const av_lapack_arg *a = i < c->nin ? &c->in[i] : &c->out[i - c->nin];
    bool seen[AV_LAPACK_MAX_RANK] = {false};
    for (int j = 0; j < a->rank; j++) {
      int64_t v = a->minor_to_major[j];
      if (v < 0 || v >= a->rank || seen[v])
        return fail(k, AV_INVALID_ARGUMENT, "%s %u: layout is not a permutation",
                    i < c->nin ? "operand" : "result", i < c->nin ? i : i - c->nin);
      seen[v] = true;
    }
  }
  return true;
}

/* One-letter attribute (ui8 holding a character, or a bool for ormqr's flags). */
static const av_attr *dict_get(const av_attr *dict, const char *name) {
  if (!dict || dict->kind != AV_ATTR_DICT) return NULL;
  for (size_t i = 0; i < dict->u.dict.n; i++)
    if (dict->u.dict.items[i].name && strcmp(dict->u.dict.items[i].name, name) == 0)
      return dict->u.dict.items[i].value;
  return NULL;
}

static bool char_attr(checker *k, const av_attr *dict, const char *name, const char *allowed,
                      char dflt, char *out) {
  const av_attr *a = dict_get(dict, name);
  if (!a) {
    if (dflt) {
      *out = dflt;
      return true;
    }
    return fail(k, AV_INVALID_ARGUMENT, "missing attribute %s", name);
  }
  if (a->kind != AV_ATTR_INT || a->u.i <= 0 || a->u.i > 127 || !strchr(allowed, (int)a->u.i))
    return fail(k, AV_INVALID_ARGUMENT, "attribute %s must be one of the characters '%s'", name,
                allowed);
  *out = (char)a->u.i;
  return true;
}

static bool bool_attr(checker *k, const av_attr *dict, const char *name, bool *out) {
  const av_attr *a = dict_get(dict, name);
  if (a && a->kind == AV_ATTR_BOOL)
    *out = a->u.b;
  else if (a && a->kind == AV_ATTR_INT)
    *out = a->u.i != 0;
  else
    return fail(k, AV_INVALID_ARGUMENT, "missing boolean attribute %s", name);
  return true;
}

static bool int_attr(checker *k, const av_attr *dict, const char *name, int32_t *out) {
  const av_attr *a = dict_get(dict, name);
  if (!a || a->kind != AV_ATTR_INT || a->u.i < INT32_MIN || a->u.i > INT32_MAX)
    return fail(k, AV_INVALID_ARGUMENT, "missing 32-bit integer attribute %s", name);
  *out = (int32_t)a->u.i;
  return true;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t dec0(int64_t n) { return n > 0 ? n - 1 : 0; }

/* Matrix operand: rank >= 2, element type t. Sets batch, m, n; nb = batch rank. */
static bool matrix(checker *k, const av_lapack_arg *a, const char *what, av_dtype t, int *nb,
                   int64_t *m, int64_t *n) {
  if (a->dtype != t || a->rank < 2)
    return fail(k, AV_INVALID_ARGUMENT, "%s must be a %s matrix (rank >= 2)", what,
                av_dtype_mlir_name(t));
  *nb = a->rank - 2;
  *m = a->dims[a->rank - 2];
  *n = a->dims[a->rank - 1];
  int64_t b = 1;
  for (int i = 0; i < *nb; i++) b *= a->dims[i];
  k->call->batch = b;
  /* LAPACK takes 32-bit sizes and indexes a matrix with 32-bit offsets */
  if (*m > INT32_MAX / 2 || *n > INT32_MAX / 2 || *m * *n > INT32_MAX)
    return fail(k, AV_UNIMPLEMENTED, "%s is too large for LAPACK's 32-bit sizes", what);
  return true;
}

static bool check_routine(checker *k, const av_attr *cfg) {
  av_lapack_call *c = k->call;
  const av_dtype t = c->dtype, r = real_of(t), s32 = AV_DT_S32;
  const bool cplx = av_dtype_is_complex(t);
  const av_lapack_arg *a = &c->in[0];
  const av_lapack_arg *o = c->out;
  int nb;
  int64_t m, n;
  switch (c->routine) {
    case AV_LAPACK_POTRF:
      return counts(k, 1, 1, 2) && matrix(k, a, "operand", t, &nb, &m, &n) &&
             (m == n || fail(k, AV_INVALID_ARGUMENT, "operand must be square")) &&
             expect(k, &o[0], "result 0", t, a, nb, 2, n, n) &&
             expect(k, &o[1], "info", s32, a, nb, 0, 0, 0) &&
             char_attr(k, cfg, "uplo", "LU", 'L', &c->uplo);
    case AV_LAPACK_GETRF:
      return counts(k, 1, 1, 3) && matrix(k, a, "operand", t, &nb, &m, &n) &&
             expect(k, &o[0], "result 0", t, a, nb, 2, m, n) &&
             expect(k, &o[1], "pivots", s32, a, nb, 1, min64(m, n), 0) &&
             expect(k, &o[2], "info", s32, a, nb, 0, 0, 0);
    case AV_LAPACK_GEQRF:
      return counts(k, 1, 1, 2) && matrix(k, a, "operand", t, &nb, &m, &n) &&
             expect(k, &o[0], "result 0", t, a, nb, 2, m, n) &&
             expect(k, &o[1], "tau", t, a, nb, 1, min64(m, n), 0);
    case AV_LAPACK_GEQP3:
      return counts(k, 2, 2, 3) && matrix(k, a, "operand", t, &nb, &m, &n) &&
             expect(k, &c->in[1], "jpvt", s32, a, nb, 1, n, 0) &&
             expect(k, &o[0], "result 0", t, a, nb, 2, m, n) &&
             expect(k, &o[1], "jpvt result", s32, a, nb, 1, n, 0) &&
             expect(k, &o[2], "tau", t, a, nb, 1, min64(m, n), 0);
    case AV_LAPACK_ORGQR: {
      if (!counts(k, 2, 2, 1) || !matrix(k, a, "operand", t, &nb, &m, &n)) return false;
      int64_t kk = c->in[1].rank == nb + 1 ? c->in[1].dims[nb] : -1;
      return expect(k, &c->in[1], "tau", t, a, nb, 1, kk, 0) &&
             (m >= n || fail(k, AV_INVALID_ARGUMENT, "operand must have rows >= columns")) &&
             (kk <= n || fail(k, AV_INVALID_ARGUMENT, "tau is longer than the columns")) &&
             expect(k, &o[0], "result", t, a, nb, 2, m, n);
    }
    case AV_LAPACK_ORMQR: {
      bool left = true, transpose = false;
      if (!counts(k, 3, 3, 1) || !matrix(k, a, "reflectors", t, &nb, &m, &n) ||
          !bool_attr(k, cfg, "left", &left) || !bool_attr(k, cfg, "transpose", &transpose))
        return false;
      int nbc;
      int64_t cm, cn;
      if (!matrix(k, &c->in[2], "operand 2", t, &nbc, &cm, &cn)) return false;
      int64_t kk = c->in[1].rank == nb + 1 ? c->in[1].dims[nb] : -1;
      c->side = left ? 'L' : 'R';
      c->trans = transpose ? (cplx ? 'C' : 'T') : 'N';
      int64_t q = left ? cm : cn;
      return (nbc == nb || fail(k, AV_INVALID_ARGUMENT, "batch ranks differ")) &&
             expect(k, &c->in[2], "operand 2", t, a, nb, 2, cm, cn) &&
             expect(k, &c->in[1], "tau", t, a, nb, 1, kk, 0) &&
             (m == q || fail(k, AV_INVALID_ARGUMENT, "reflector rows must match the operand")) &&
             ((kk <= n && kk <= q) ||
              fail(k, AV_INVALID_ARGUMENT, "more reflectors than the matrices allow")) &&
             expect(k, &o[0], "result", t, &c->in[2], nb, 2, cm, cn);
    }
    case AV_LAPACK_TRSM: {
      if (!counts(k, 2, 3, 1) || !matrix(k, &c->in[1], "right-hand side", t, &nb, &m, &n) ||
          !char_attr(k, cfg, "side", "LR", 'L', &c->side) ||
          !char_attr(k, cfg, "uplo", "LU", 'L', &c->uplo) ||
          !char_attr(k, cfg, "trans_x", "NTC", 'N', &c->trans) ||
          !char_attr(k, cfg, "diag", "NU", 'N', &c->diag))
        return false;
      int64_t q = c->side == 'L' ? m : n;
      return expect(k, a, "triangular operand", t, &c->in[1], nb, 2, q, q) &&
             (c->nin < 3 || expect(k, &c->in[2], "alpha", t, a, 0, 0, 0, 0)) &&
             expect(k, &o[0], "result", t, &c->in[1], nb, 2, m, n);
    }
    case AV_LAPACK_GTSV: {
      if (!counts(k, 4, 4, 5) || !matrix(k, &c->in[3], "right-hand side", t, &nb, &m, &n))
        return false;
      const av_lapack_arg *b = &c->in[3];
      static const char *const names[3] = {"dl", "d", "du"};
      for (int i = 0; i < 3; i++)
        if (!expect(k, &c->in[i], names[i], t, b, nb, 1, m, 0) ||
            !expect(k, &o[i], names[i], t, b, nb, 1, m, 0))
          return false;
      return expect(k, &o[3], "result", t, b, nb, 2, m, n) &&
             expect(k, &o[4], "info", s32, b, nb, 0, 0, 0);
    }
    case AV_LAPACK_GTSV_PERTURBED: {
      if (!counts(k, 4, 4, 1) || !matrix(k, &c->in[3], "right-hand side", t, &nb, &m, &n))
        return false;
      const av_lapack_arg *b = &c->in[3];
      static const char *const names[3] = {"dl", "d", "du"};
      for (int i = 0; i < 3; i++)
        if (!expect(k, &c->in[i], names[i], t, b, nb, 1, m, 0)) return false;
      return expect(k, &o[0], "result", t, b, nb, 2, m, n);
    }
    case AV_LAPACK_SYEVD:
      return counts(k, 1, 1, 3) && matrix(k, a, "operand", t, &nb, &m, &n) &&
             (m == n || fail(k, AV_INVALID_ARGUMENT, "operand must be square")) &&
             expect(k, &o[0], "eigenvectors", t, a, nb, 2, n, n) &&
             expect(k, &o[1], "eigenvalues", r, a, nb, 1, n, 0) &&
             expect(k, &o[2], "info", s32, a, nb, 0, 0, 0) &&
             char_attr(k, cfg, "uplo", "LU", 'L', &c->uplo) &&
             char_attr(k, cfg, "mode", "VN", 'V', &c->mode);
    case AV_LAPACK_GESDD:
    case AV_LAPACK_GESVD: {
      if (!counts(k, 1, 1, 5) || !matrix(k, a, "operand", t, &nb, &m, &n) ||
          !char_attr(k, cfg, "mode", "ASNO", 0, &c->mode))
        return false;
      if (c->mode == 'O')
        return fail(k, AV_UNIMPLEMENTED, "computation mode 'O' (overwrite) is not supported");
      int64_t mn = min64(m, n);
      int64_t ucols = c->mode == 'S' ? mn : m, vrows = c->mode == 'S' ? mn : n;
      if (c->mode == 'N') { /* U and V^T are not computed: any shape JAX chose */
        ucols = o[2].rank == nb + 2 ? o[2].dims[nb + 1] : -1;
        vrows = o[3].rank == nb + 2 ? o[3].dims[nb] : -1;
      }
      return expect(k, &o[0], "result 0", t, a, nb, 2, m, n) &&
             expect(k, &o[1], "singular values", r, a, nb, 1, mn, 0) &&
             expect(k, &o[2], "u", t, a, nb, 2, m, ucols) &&
             expect(k, &o[3], "vt", t, a, nb, 2, vrows, n) &&
             expect(k, &o[4], "info", s32, a, nb, 0, 0, 0);
    }
    case AV_LAPACK_GEEV: {
      uint32_t nres = cplx ? 4 : 5;
      if (!counts(k, 1, 1, nres) || !matrix(k, a, "operand", t, &nb, &m, &n) ||
          !char_attr(k, cfg, "compute_left", "VN", 0, &c->jobvl) ||
          !char_attr(k, cfg, "compute_right", "VN", 0, &c->jobvr))
        return false;
      if (m != n) return fail(k, AV_INVALID_ARGUMENT, "operand must be square");
      uint32_t v = cplx ? 1 : 2;
      av_dtype ct = complex_of(t);
      return expect(k, &o[0], "eigenvalues", t, a, nb, 1, n, 0) &&
             (cplx || expect(k, &o[1], "eigenvalues (imaginary)", t, a, nb, 1, n, 0)) &&
             expect(k, &o[v], "left eigenvectors", ct, a, nb, 2, n, n) &&
             expect(k, &o[v + 1], "right eigenvectors", ct, a, nb, 2, n, n) &&
             expect(k, &o[v + 2], "info", s32, a, nb, 0, 0, 0);
    }
    case AV_LAPACK_GEES: {
      uint32_t nres = cplx ? 5 : 6;
      char sort = 'N';
      if (!counts(k, 1, 1, nres) || !matrix(k, a, "operand", t, &nb, &m, &n) ||
          !char_attr(k, cfg, "mode", "VN", 'V', &c->mode) ||
          !char_attr(k, cfg, "sort", "NS", 'N', &sort))
        return false;
      if (sort != 'N') return fail(k, AV_UNIMPLEMENTED, "sorted Schur forms are not supported");
      if (m != n) return fail(k, AV_INVALID_ARGUMENT, "operand must be square");
      uint32_t e = cplx ? 3 : 4;
      return expect(k, &o[0], "Schur form", t, a, nb, 2, n, n) &&
             expect(k, &o[1], "Schur vectors", t, a, nb, 2, n, n) &&
             expect(k, &o[2], "eigenvalues", t, a, nb, 1, n, 0) &&
             (cplx || expect(k, &o[3], "eigenvalues (imaginary)", t, a, nb, 1, n, 0)) &&
             expect(k, &o[e], "selected count", s32, a, nb, 0, 0, 0) &&
             expect(k, &o[e + 1], "info", s32, a, nb, 0, 0, 0);
    }
    case AV_LAPACK_GEHRD:
      if (!counts(k, 1, 1, 3) || !matrix(k, a, "operand", t, &nb, &m, &n) ||
          !int_attr(k, cfg, "low", &c->low) || !int_attr(k, cfg, "high", &c->high))
        return false;
      if (m != n) return fail(k, AV_INVALID_ARGUMENT, "operand must be square");
      /* LAPACK: 1 <= ilo <= ihi <= n (ilo = 1, ihi = 0 when n = 0) */
      if (n > 0 ? !(c->low >= 1 && c->low <= c->high && c->high <= n)
                : !(c->low == 1 && c->high <= 1))
        return fail(k, AV_INVALID_ARGUMENT, "low/high (%d, %d) out of range for order %lld", c->low,
                    c->high, (long long)n);
      if (n == 0) c->high = 0;
      return expect(k, &o[0], "result 0", t, a, nb, 2, n, n) &&
             expect(k, &o[1], "tau", t, a, nb, 1, dec0(n), 0) &&
             expect(k, &o[2], "info", s32, a, nb, 0, 0, 0);
    case AV_LAPACK_SYTRD:
      return counts(k, 1, 1, 5) && matrix(k, a, "operand", t, &nb, &m, &n) &&
             (m == n || fail(k, AV_INVALID_ARGUMENT, "operand must be square")) &&
             expect(k, &o[0], "result 0", t, a, nb, 2, n, n) &&
             expect(k, &o[1], "diagonal", r, a, nb, 1, n, 0) &&
             expect(k, &o[2], "off-diagonal", r, a, nb, 1, dec0(n), 0) &&
             expect(k, &o[3], "tau", t, a, nb, 1, dec0(n), 0) &&
             expect(k, &o[4], "info", s32, a, nb, 0, 0, 0) &&
             char_attr(k, cfg, "uplo", "LU", 'L', &c->uplo);
  }
  return fail(k, AV_INTERNAL, "unknown routine");
}

av_code av_lapack_prepare(const char *target, const av_attr *backend_config, av_lapack_call *call,
                          char *err, size_t errcap) {
  checker k = {call, err, errcap, AV_OK};
  if (errcap) err[0] = '\0';
  if (!av_lapack_target(target, &call->routine, &call->dtype)) {
    fail(&k, AV_UNIMPLEMENTED, "not a LAPACK target");
    return k.code;
  }
  if (call->routine == AV_LAPACK_GTSV_PERTURBED) { /* the type comes from the operands */
    av_dtype t = call->nin == 4 ? call->in[3].dtype : AV_DT_INVALID;
    if (t != AV_DT_F32 && t != AV_DT_F64 && t != AV_DT_C64 && t != AV_DT_C128) {
      fail(&k, AV_INVALID_ARGUMENT, "operands must be f32, f64, complex64 or complex128");
      return k.code;
    }
    call->dtype = t;
  }
  if (backend_config && backend_config->kind != AV_ATTR_DICT) {
    fail(&k, AV_INVALID_ARGUMENT, "backend_config must be a dictionary (api_version 4)");
    return k.code;
  }
  if (call->nin == 0 || call->nin > AV_LAPACK_MAX_ARGS || call->nout > AV_LAPACK_MAX_ARGS) {
    fail(&k, AV_INVALID_ARGUMENT, "bad operand/result counts");
    return k.code;
  }
  if (layouts_valid(&k) && check_routine(&k, backend_config) && k.code == AV_OK) return AV_OK;
  if (k.code == AV_OK) fail(&k, AV_INVALID_ARGUMENT, "malformed call");
  return k.code;
}
