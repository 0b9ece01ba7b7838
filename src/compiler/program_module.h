/* Building a program from an IR module that is already in memory (tests, tools that load
 * modules themselves). Takes ownership of the module, also on failure. */
#ifndef ANVIL_COMPILER_PROGRAM_MODULE_H
#define ANVIL_COMPILER_PROGRAM_MODULE_H

#include "compiler/program.h"
#include "ir/ir.h"

av_program *av_program_from_module(av_module *m, const av_compile_options *options, av_diag *d);

/* Type of input i (tools that make inputs); false if out of range. */
bool av_program_input_type(const av_program *p, int i, av_dtype *dtype, int *rank,
                           const int64_t **dims);

#endif
