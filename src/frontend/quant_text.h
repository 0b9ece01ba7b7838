/* The textual form of uniform quantized element types, shared by the MLIR text reader and the
 * bytecode reader's textual types:
 *   !quant.uniform<i8:f32, 0.5:-3>                 per tensor: scale[:zero_point]
 *   !quant.uniform<u8<1:255>:f32:0, {0.1,0.2:4}>   narrowed storage range, per axis 0 */
#ifndef ANVIL_FRONTEND_QUANT_TEXT_H
#define ANVIL_FRONTEND_QUANT_TEXT_H

#include <stddef.h>

#include "ir/ir.h"

/* Parses the type starting at s (at most n bytes). On success returns NULL and sets *storage,
 * *q (scales and zero points allocated in m's arena) and *used (bytes read, through the
 * closing '>'); otherwise returns what is wrong. */
const char *av_parse_quant_type(av_module *m, const char *s, size_t n, av_dtype *storage,
                                av_quant *q, size_t *used);

#endif
