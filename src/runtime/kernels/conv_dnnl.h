/* Convolutions on oneDNN (the only file that knows it is conv_dnnl.c).
 *
 * The compiler asks av_conv_dnnl_plan whether a convolution maps onto one of oneDNN's three
 * convolution primitives, read from its attributes and operand shapes:
 *   - forward: no lhs dilation (strides, padding, rhs dilation, window reversal, feature
 *     groups);
 *   - backward data (a transposed convolution): lhs dilation, unit window strides; the kernel
 *     is the forward kernel reversed, its feature dimensions swapped;
 *   - backward weights: no lhs dilation, no feature groups, and a "kernel" larger than the
 *     result (the weight gradient JAX emits: batch and feature roles exchanged, the forward
 *     stride as rhs dilation, a grouped convolution's groups as batch groups).
 * f32 operands with an f32 result, or bf16 operands with a bf16 or f32 result (oneDNN's bf16
 * kernels multiply exactly and sum in f32, flushing denormals, and round to bf16 once at the
 * end, as the im2col path does); everything else stays on conv.c's im2col path. Primitives are
 * created on the first run (with the thread count fixed to 1) and kept in the plan. A run
 * splits the batch (backward weights: the reduction over the batch) into chunks that depend
 * only on its size, runs them on the pool, and sums weight-gradient partials in chunk order,
 * so results do not depend on the number of threads. */
#ifndef ANVIL_RUNTIME_KERNELS_CONV_DNNL_H
#define ANVIL_RUNTIME_KERNELS_CONV_DNNL_H

#include <stdbool.h>

#include "runtime/kernels/conv.h"

typedef struct av_conv_dnnl av_conv_dnnl;

/* A plan for this convolution on oneDNN, or NULL when it does not map onto a primitive (or
 * out of memory): the caller then uses the im2col path. Dimension arrays have rank
 * p->nspatial + 2. */
av_conv_dnnl *av_conv_dnnl_plan(const av_conv_params *p, av_dtype lhs_t, const int64_t *lhs_dims,
                                av_dtype rhs_t, const int64_t *rhs_dims, av_dtype out_t,
                                const int64_t *out_dims);
void av_conv_dnnl_free(void *plan);

/* Runs the convolution; *handled = false (and AV_OK) when oneDNN declined it (no primitive
 * for it on this CPU: the caller runs its own path). Views must have the planned shapes. */
av_code av_conv_dnnl_run(av_conv_dnnl *plan, struct av_thread_pool *pool, const av_view *lhs,
                         const av_view *rhs, av_view *out, bool *handled, av_diag *d);

/* "forward", "backward_data" or "backward_weights" (tests, debugging). */
const char *av_conv_dnnl_form(const av_conv_dnnl *plan);

#endif
