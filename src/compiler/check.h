/* Whether anvil can run a module: walks the entry function and everything it reaches and
 * lists, all at once, every unsupported op (name and location) and unsupported type (dynamic
 * shapes, quantized types...). Used by av_program_compile and by tools such as
 * anvil-conformance to tell "cannot run" from "runs wrong". */
#ifndef ANVIL_COMPILER_CHECK_H
#define ANVIL_COMPILER_CHECK_H

#include <stdio.h>

#include "ir/ir.h"
#include "util/diag.h"

/* Runs the compiler's IR passes on m (it is rewritten, as for compiling) and lowers it. */
av_code av_check_module(av_module *m, av_diag *d);
/* Same, writing notes to `notes` (may be NULL): for a multi-device module, the ops the
 * partitioner runs on gathered (whole) operands, or why it runs as one global program. */
av_code av_check_module_notes(av_module *m, FILE *notes, av_diag *d);

#endif
