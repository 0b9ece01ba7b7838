/* Placeholder until the compiler lands: every entry answers UNIMPLEMENTED with a clear message. */
#include "compiler/program.h"

#include <stdlib.h>
#include <string.h>

av_program *av_program_compile(const char *format, size_t format_size, const void *code,
                               size_t code_size, const av_compile_options *options, av_diag *d) {
  (void)code;
  (void)code_size;
  (void)options;
  av_diag_set(d, AV_UNIMPLEMENTED, "anvil: compiling programs (format '%.*s') is not implemented yet",
              (int)format_size, format);
  return NULL;
}

void av_program_free(av_program *p) { (void)p; }
const char *av_program_name(const av_program *p) { (void)p; return ""; }
int av_program_num_replicas(const av_program *p) { (void)p; return 1; }
int av_program_num_partitions(const av_program *p) { (void)p; return 1; }
int av_program_num_inputs(const av_program *p) { (void)p; return 0; }
int av_program_num_outputs(const av_program *p) { (void)p; return 0; }
av_dtype av_program_output_dtype(const av_program *p, int i) { (void)p; (void)i; return AV_DT_INVALID; }
int av_program_output_rank(const av_program *p, int i) { (void)p; (void)i; return 0; }
const int64_t *av_program_output_dims(const av_program *p, int i) { (void)p; (void)i; return NULL; }
int av_program_output_alias(const av_program *p, int i) { (void)p; (void)i; return -1; }
uint64_t av_program_fingerprint(const av_program *p) { (void)p; return 0; }
char *av_program_text(const av_program *p) { (void)p; return NULL; }

av_code av_program_execute(av_program *p, int device_index, const av_tensor *inputs,
                           av_tensor *outputs, av_diag *d) {
  (void)p; (void)device_index; (void)inputs; (void)outputs;
  return av_diag_set(d, AV_UNIMPLEMENTED, "anvil: executing programs is not implemented yet");
}
