/* Tokenizer for MLIR text (the subset StableHLO programs use).
 *
 * Tokens point into the source buffer (no copies). Whitespace and `//` comments are skipped.
 * A few constructs (tensor shapes like `2x?x3xf32`, opaque `<...>` payloads) are scanned by
 * the parser directly on the characters; the lexer exposes its position for that. */
#ifndef ANVIL_FRONTEND_MLIR_TEXT_LEXER_H
#define ANVIL_FRONTEND_MLIR_TEXT_LEXER_H

#include <stdbool.h>
#include <stddef.h>

typedef enum mt_tok_kind {
  MT_EOF,
  MT_ERROR,   /* invalid character or unterminated string */
  MT_IDENT,   /* bare identifier: letters, digits, _ $ . */
  MT_PERCENT, /* %name (text includes the %) */
  MT_CARET,   /* ^bb0 */
  MT_AT,      /* @name or @"quoted" */
  MT_HASH,    /* #name (alias, dialect attribute, result number) */
  MT_BANG,    /* !name (dialect or alias type) */
  MT_INT,     /* decimal or 0x hex digits (no sign) */
  MT_FLOAT,   /* digits with '.' and/or exponent (no sign) */
  MT_STRING,  /* "..." including the quotes */
  MT_LPAREN,
  MT_RPAREN,
  MT_LBRACKET,
  MT_RBRACKET,
  MT_LBRACE,
  MT_RBRACE,
  MT_LESS,
  MT_GREATER,
  MT_COMMA,
  MT_COLON,
  MT_EQUAL,
  MT_ARROW, /* -> */
  MT_QUESTION,
  MT_STAR,
  MT_PLUS,
  MT_MINUS,
  MT_FILE_META_BEGIN, /* {-# */
  MT_FILE_META_END,   /* #-} */
} mt_tok_kind;

typedef struct mt_tok {
  mt_tok_kind kind;
  const char *p; /* first character */
  size_t len;
} mt_tok;

typedef struct mt_lexer {
  const char *begin, *end;
  const char *pos; /* next character to read */
} mt_lexer;

void mt_lexer_init(mt_lexer *lx, const char *text, size_t len);
mt_tok mt_lex(mt_lexer *lx);
/* Skips whitespace and comments; returns the position of the next significant character. */
const char *mt_lexer_skip_space(mt_lexer *lx);
/* 1-based line and column of `at` within the buffer. */
void mt_lexer_line_col(const mt_lexer *lx, const char *at, int *line, int *col);

bool mt_tok_is(const mt_tok *t, const char *word);

/* Decodes a MT_STRING token's escapes (\\ \" \n \t \XX) into `out` (room for len bytes).
 * Returns the decoded length. */
size_t mt_string_decode(const mt_tok *t, char *out);

#endif
