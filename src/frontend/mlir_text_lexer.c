#include "frontend/mlir_text_lexer.h"

#include <string.h>

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static bool is_bare_char(char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '$' || c == '.'; }
static bool is_suffix_char(char c) { return is_bare_char(c) || c == '-'; }

void mt_lexer_init(mt_lexer *lx, const char *text, size_t len) {
  lx->begin = text;
  lx->end = text + len;
  lx->pos = text;
}

const char *mt_lexer_skip_space(mt_lexer *lx) {
  const char *p = lx->pos, *e = lx->end;
  for (;;) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    if (p + 1 < e && p[0] == '/' && p[1] == '/') {
      while (p < e && *p != '\n') p++;
      continue;
    }
    break;
  }
  lx->pos = p;
  return p;
}

void mt_lexer_line_col(const mt_lexer *lx, const char *at, int *line, int *col) {
  int l = 1, c = 1;
  if (at > lx->end) at = lx->end;
  for (const char *p = lx->begin; p < at; p++) {
    if (*p == '\n') {
      l++;
      c = 1;
    } else {
      c++;
    }
  }
  *line = l;
  *col = c;
}

bool mt_tok_is(const mt_tok *t, const char *word) {
  size_t n = strlen(word);
  return t->kind == MT_IDENT && t->len == n && memcmp(t->p, word, n) == 0;
}

static mt_tok make(mt_tok_kind k, const char *p, size_t len) {
  mt_tok t = {k, p, len};
  return t;
}

/* Scans a quoted string starting at p (pointing at the opening quote); returns the position
 * after the closing quote, or NULL if unterminated. */
static const char *scan_string(const char *p, const char *e) {
  p++;
  while (p < e) {
    if (*p == '"') return p + 1;
    if (*p == '\\') {
      p++;
      if (p >= e) return NULL;
    }
    if (*p == '\n') return NULL;
    p++;
  }
  return NULL;
}

mt_tok mt_lex(mt_lexer *lx) {
  const char *p = mt_lexer_skip_space(lx), *e = lx->end;
  if (p >= e) return make(MT_EOF, p, 0);
  const char *s = p;
  char c = *p;
  mt_tok_kind single = MT_ERROR;
  switch (c) {
    case '(': single = MT_LPAREN; break;
    case ')': single = MT_RPAREN; break;
    case '[': single = MT_LBRACKET; break;
    case ']': single = MT_RBRACKET; break;
    case '}': single = MT_RBRACE; break;
    case '<': single = MT_LESS; break;
    case '>': single = MT_GREATER; break;
    case ',': single = MT_COMMA; break;
    case ':': single = MT_COLON; break;
    case '=': single = MT_EQUAL; break;
    case '?': single = MT_QUESTION; break;
    case '*': single = MT_STAR; break;
    case '+': single = MT_PLUS; break;
    default: break;
  }
  if (single != MT_ERROR) {
    lx->pos = p + 1;
    return make(single, s, 1);
  }
  if (c == '{') {
    if (p + 2 < e && p[1] == '-' && p[2] == '#') {
      lx->pos = p + 3;
      return make(MT_FILE_META_BEGIN, s, 3);
    }
    lx->pos = p + 1;
    return make(MT_LBRACE, s, 1);
  }
  if (c == '-') {
    if (p + 1 < e && p[1] == '>') {
      lx->pos = p + 2;
      return make(MT_ARROW, s, 2);
    }
    lx->pos = p + 1;
    return make(MT_MINUS, s, 1);
  }
  if (c == '"') {
    const char *q = scan_string(p, e);
    if (!q) {
      lx->pos = e;
      return make(MT_ERROR, s, 1);
    }
    lx->pos = q;
    return make(MT_STRING, s, (size_t)(q - s));
  }
  if (c == '#' && p + 2 < e && p[1] == '-' && p[2] == '}') {
    lx->pos = p + 3;
    return make(MT_FILE_META_END, s, 3);
  }
  if (c == '%' || c == '^' || c == '#' || c == '!' || c == '@') {
    mt_tok_kind k = c == '%' ? MT_PERCENT : c == '^' ? MT_CARET : c == '#' ? MT_HASH
                  : c == '!' ? MT_BANG : MT_AT;
    p++;
    if (k == MT_AT && p < e && *p == '"') {
      const char *q = scan_string(p, e);
      if (!q) {
        lx->pos = e;
        return make(MT_ERROR, s, 1);
      }
      lx->pos = q;
      return make(k, s, (size_t)(q - s));
    }
    while (p < e && is_suffix_char(*p)) p++;
    if (p == s + 1) {
      lx->pos = p;
      return make(MT_ERROR, s, 1);
    }
    lx->pos = p;
    return make(k, s, (size_t)(p - s));
  }
  if (is_digit(c)) {
    if (c == '0' && p + 2 <= e && p + 1 < e && (p[1] == 'x' || p[1] == 'X') && p + 2 < e &&
        is_hex(p[2])) {
      p += 2;
      while (p < e && is_hex(*p)) p++;
      lx->pos = p;
      return make(MT_INT, s, (size_t)(p - s));
    }
    bool is_float = false;
    while (p < e && is_digit(*p)) p++;
    if (p < e && *p == '.') {
      is_float = true;
      p++;
      while (p < e && is_digit(*p)) p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
      const char *q = p + 1;
      if (q < e && (*q == '+' || *q == '-')) q++;
      if (q < e && is_digit(*q)) {
        is_float = true;
        while (q < e && is_digit(*q)) q++;
        p = q;
      }
    }
    lx->pos = p;
    return make(is_float ? MT_FLOAT : MT_INT, s, (size_t)(p - s));
  }
  if (is_alpha(c) || c == '_') {
    while (p < e && is_bare_char(*p)) p++;
    lx->pos = p;
    return make(MT_IDENT, s, (size_t)(p - s));
  }
  lx->pos = p + 1;
  return make(MT_ERROR, s, 1);
}

static int hex_val(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

size_t mt_string_decode(const mt_tok *t, char *out) {
  const char *p = t->p, *e = t->p + t->len;
  if (p < e && *p == '@') p++;
  if (p < e && *p == '"') p++;
  if (e > p && e[-1] == '"') e--;
  size_t n = 0;
  while (p < e) {
    char c = *p++;
    if (c != '\\' || p >= e) {
      out[n++] = c;
      continue;
    }
    char x = *p++;
    switch (x) {
      case 'n': out[n++] = '\n'; break;
      case 't': out[n++] = '\t'; break;
      case '\\': out[n++] = '\\'; break;
      case '"': out[n++] = '"'; break;
      default:
        if (p < e && hex_val(x) >= 0 && hex_val(*p) >= 0) {
          out[n++] = (char)(hex_val(x) * 16 + hex_val(*p));
          p++;
        } else {
          out[n++] = x;
        }
    }
  }
  return n;
}
