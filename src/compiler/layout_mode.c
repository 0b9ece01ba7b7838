/* mhlo.layout_mode on main's arguments and results (see layout_mode.h). */
#include "compiler/layout_mode.h"

#include <stdio.h>
#include <string.h>

#include "compiler/attrs.h"
#include "compiler/program.h" /* AV_MAX_RANK */

static av_layout_kind classify(int rank, int64_t *m2m) {
  for (int k = 0; k < rank; k++)
    if (m2m[k] != rank - 1 - k) return AV_LAYOUT_CUSTOM;
  return AV_LAYOUT_DEFAULT;
}

static void set_default(int rank, int64_t *m2m) {
  for (int k = 0; k < rank; k++) m2m[k] = rank - 1 - k;
}

av_layout_kind av_layout_parse(const char *text, int rank, int64_t *m2m, char *why,
                               size_t why_size) {
  const char *s = text;
  bool seen[AV_MAX_RANK] = {false};
  int n = 0;
  if (rank < 0 || rank > AV_MAX_RANK || *s++ != '{') goto bad;
  while (*s == ' ') s++;
  while (*s && *s != '}') {
    if (*s < '0' || *s > '9') goto bad; /* ':' starts tiles, element sizes, memory spaces */
    long d = 0;
    while (*s >= '0' && *s <= '9' && d < 1000) d = d * 10 + (*s++ - '0');
    if (n >= rank || d >= rank || seen[d]) goto bad;
    seen[d] = true;
    m2m[n++] = d;
    while (*s == ' ') s++;
    if (*s == ',') s++;
    while (*s == ' ') s++;
  }
  if (*s != '}' || s[1] != '\0' || n != rank) goto bad;
  return classify(rank, m2m);
bad:
  snprintf(why, why_size,
           "layout '%.60s' is not a minor-to-major permutation of %d dimensions (anvil stores "
           "dense arrays: no tiles, element sizes or memory spaces)",
           text, rank);
  return AV_LAYOUT_ERROR;
}

static const char *mode_of(const av_func *ef, bool output, int i) {
  const av_attr **attrs = output ? ef->res_attrs : ef->arg_attrs;
  const av_attr *a = attrs ? av_dict_get(attrs[i], "mhlo.layout_mode") : NULL;
  return a && a->kind == AV_ATTR_STRING ? a->u.str.s : NULL;
}

/* An "auto" result: if it is transpose(argument), the layout that makes the transpose of a
 * row-major array free. XLA:CPU picks that whatever layout the argument itself has (the
 * argument is brought to row-major first), so a column-major 2-D argument transposed gives a
 * column-major result too. */
static av_layout_kind auto_result(const av_func *ef, int i, int rank, int64_t *m2m) {
  set_default(rank, m2m);
  if (ef->body.nblocks < 1) return AV_LAYOUT_DEFAULT;
  const av_block *entry = &ef->body.blocks[0];
  const av_op *ret = entry->last;
  if (!ret || (uint32_t)i >= ret->noperands) return AV_LAYOUT_DEFAULT;
  const av_value *v = ret->operands[i];
  const av_op *t = v ? v->def : NULL;
  if (!t || !t->name || strcmp(t->name, "stablehlo.transpose") != 0 || t->noperands != 1)
    return AV_LAYOUT_DEFAULT;
  const av_value *src = t->operands[0];
  if (src->def || src->owner != entry) return AV_LAYOUT_DEFAULT;
  int64_t perm[AV_MAX_RANK], inverse[AV_MAX_RANK];
  size_t n = 0;
  if (!av_attr_get_ints(t, "permutation", perm, AV_MAX_RANK, &n) || (int)n != rank)
    return AV_LAYOUT_DEFAULT;
  bool seen[AV_MAX_RANK] = {false};
  for (int k = 0; k < rank; k++) {
    if (perm[k] < 0 || perm[k] >= rank || seen[perm[k]]) return AV_LAYOUT_DEFAULT;
    seen[perm[k]] = true;
    inverse[perm[k]] = k;
  }
  /* result dim k is source dim perm[k]: walk the source's dims from minor to major */
  for (int k = 0; k < rank; k++) m2m[k] = inverse[rank - 1 - k];
  return classify(rank, m2m);
}

av_layout_kind av_layout_of(const av_func *ef, bool output, int i, int rank, int64_t *m2m,
                            char *why, size_t why_size) {
  if (rank < 0 || rank > AV_MAX_RANK) rank = 0;
  set_default(rank, m2m);
  if (!ef || i < 0) return AV_LAYOUT_DEFAULT;
  uint32_t count = output ? ef->type->nelems - ef->type->ninputs : ef->type->ninputs;
  if ((uint32_t)i >= count) return AV_LAYOUT_DEFAULT;
  const char *mode = mode_of(ef, output, i);
  if (!mode || strcmp(mode, "default") == 0) return AV_LAYOUT_DEFAULT;
  if (strcmp(mode, "auto") == 0) return output ? auto_result(ef, i, rank, m2m) : AV_LAYOUT_DEFAULT;
  return av_layout_parse(mode, rank, m2m, why, why_size);
}
