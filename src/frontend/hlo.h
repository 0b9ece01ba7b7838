/* HLO frontend: a serialized xla.HloModuleProto (what PyTorch/XLA and XlaBuilder send with
 * PJRT program format "hlo") -> anvil IR with StableHLO op names and flat VHLO attributes.
 *
 * The entry computation becomes the public function "main"; its tuple parameters and tuple
 * result are flattened (leaves in depth-first order), which is the flat buffer list PJRT
 * passes and returns. Tuples never appear in the IR: tuple / get-tuple-element are resolved
 * while importing. Computations used as bodies become regions of the op (reduce, while,
 * conditional, sort, scatter, map, reduce-window, select-and-scatter, all-reduce,
 * reduce-scatter); `call` targets become private functions. Opcodes without a StableHLO
 * counterpart stay as unknown ops named "hlo.<opcode>" for the checker to list. */
#ifndef ANVIL_FRONTEND_HLO_H
#define ANVIL_FRONTEND_HLO_H

#include <stddef.h>

#include "ir/ir.h"
#include "util/diag.h"

/* NULL on failure with the reason in `d` (which computation/instruction and what). */
av_module *av_load_hlo_proto(const void *data, size_t size, av_diag *d);

#endif
