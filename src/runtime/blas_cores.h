/* OpenBLAS's kernels re-chosen for a CPU newer than the library (see blas_cores.c). */
#ifndef ANVIL_RUNTIME_BLAS_CORES_H
#define ANVIL_RUNTIME_BLAS_CORES_H

#include <stdbool.h>

/* Once per process (also run when the library loads); later calls return at once. */
void av_blas_choose_kernels(void);
/* The kernels OpenBLAS runs now ("SkylakeX", "Haswell"...), and in *before (may be NULL)
 * the ones it had chosen by itself. */
const char *av_blas_kernels(const char **before);

#endif
