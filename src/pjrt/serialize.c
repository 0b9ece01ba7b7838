/* Executable serialization. anvil compiles in milliseconds, so a serialized executable is the
 * program as given plus its compile options; DeserializeAndLoad compiles it again.
 *
 * Layout (little endian):
 *   "ANVILEX2" | u64 version_len | version | u64 format_len | format | u64 code_len | code |
 *   u64 options_len | options | u64 checksum
 * `version` is the anvil version that wrote it; `checksum` is XXH3-64 (util/checksum.h) of
 * every byte before it. Blobs come back from the persistent compilation cache and from
 * jax.experimental.serialize_executable, so a corrupt or foreign one must be refused with
 * INVALID_ARGUMENT (the framework then compiles again), never loaded: a flipped bit in a
 * constant would otherwise run a different program without a word. The checksum is checked
 * first, then every length against the bytes left. */
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_internal.h"
#include "util/checksum.h"

static const char magic[8] = {'A', 'N', 'V', 'I', 'L', 'E', 'X', '2'};
static const char magic_v1[8] = {'A', 'N', 'V', 'I', 'L', 'E', 'X', '1'};
static const char writer_version[] = ANVIL_VERSION_STRING;

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* Appends a length-prefixed field at buf + *n. */
static void put_field(unsigned char *buf, size_t *n, const void *field, size_t len) {
  put_u64(buf + *n, len);
  *n += 8;
  if (len) memcpy(buf + *n, field, len);
  *n += len;
}

static void free_bytes(PJRT_SerializedExecutable *s) { free(s); }
static void free_options(PJRT_SerializedCompileOptions *s) { free(s); }

PJRT_Error *av_PJRT_Executable_Serialize(PJRT_Executable_Serialize_Args *args) {
  AV_ARGS(args, PJRT_Executable_Serialize_Args);
  const char *fn = "PJRT_Executable_Serialize";
  AV_REQUIRE(args->executable && args->executable->core, AV_INVALID_ARGUMENT,
             "%s: executable is NULL", fn);
  const av_exec_core *c = args->executable->core;
  /* the program as given names its partitioner by a key of the compiling process (JAX: the
   * id of a Python object), which another process could resolve to another partitioner */
  AV_REQUIRE(!av_program_custom_partitioned(c->program), AV_UNIMPLEMENTED,
             "%s: a custom partitioner (jax.experimental.custom_partitioning) wrote part of this "
             "executable; anvil serializes programs as given, which only this process can partition",
             fn);
  size_t vlen = sizeof writer_version - 1, flen = strlen(c->source_format);
  size_t total = sizeof magic + 5 * 8 + vlen + flen + c->source_code_size + c->source_options_size;
  unsigned char *buf = malloc(total);
  AV_REQUIRE(buf, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (%zu-byte executable)", total);
  size_t n = 0;
  memcpy(buf, magic, sizeof magic);
  n += sizeof magic;
  put_field(buf, &n, writer_version, vlen);
  put_field(buf, &n, c->source_format, flen);
  put_field(buf, &n, c->source_code, c->source_code_size);
  put_field(buf, &n, c->source_options, c->source_options_size);
  put_u64(buf + n, av_checksum64(buf, n));
  n += 8;
  args->serialized_bytes = (const char *)buf;
  args->serialized_bytes_size = n;
  args->serialized_executable = (PJRT_SerializedExecutable *)buf;
  args->serialized_executable_deleter = free_bytes;
  return NULL;
}

/* Reads one length-prefixed field; false if it does not fit in what is left. */
static bool take(const unsigned char **p, size_t *left, const char **field, size_t *len) {
  if (*left < 8) return false;
  uint64_t n = get_u64(*p);
  *p += 8;
  *left -= 8;
  if (n > *left) return false;
  *field = (const char *)*p;
  *len = (size_t)n;
  *p += n;
  *left -= (size_t)n;
  return true;
}

PJRT_Error *av_PJRT_Executable_DeserializeAndLoad(PJRT_Executable_DeserializeAndLoad_Args *args) {
  AV_ARGS(args, PJRT_Executable_DeserializeAndLoad_Args);
  const char *fn = "PJRT_Executable_DeserializeAndLoad";
  args->loaded_executable = NULL;
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  AV_REQUIRE(args->serialized_executable || args->serialized_executable_size == 0,
             AV_INVALID_ARGUMENT, "%s: serialized_executable is NULL", fn);
  const unsigned char *p = (const unsigned char *)args->serialized_executable;
  size_t size = args->serialized_executable_size;
  AV_REQUIRE(size < sizeof magic || memcmp(p, magic_v1, sizeof magic_v1) != 0,
             AV_INVALID_ARGUMENT,
             "%s: written by an older anvil (format ANVILEX1, no checksum): compile again", fn);
  AV_REQUIRE(size >= sizeof magic + 8 && memcmp(p, magic, sizeof magic) == 0,
             AV_INVALID_ARGUMENT, "%s: not an anvil executable (bad magic)", fn);
  uint64_t want = get_u64(p + size - 8), got = av_checksum64(p, size - 8);
  AV_REQUIRE(want == got, AV_INVALID_ARGUMENT,
             "%s: checksum mismatch (stored %016llx, computed %016llx over %zu bytes): the "
             "serialized executable is corrupt",
             fn, (unsigned long long)want, (unsigned long long)got, size - 8);
  p += sizeof magic;
  size_t left = size - sizeof magic - 8;
  const char *version, *format, *code, *options;
  size_t version_len, format_len, code_len, options_len;
  AV_REQUIRE(take(&p, &left, &version, &version_len), AV_INVALID_ARGUMENT,
             "%s: truncated or corrupt serialized executable (version)", fn);
  AV_REQUIRE(version_len == sizeof writer_version - 1 &&
                 memcmp(version, writer_version, version_len) == 0,
             AV_INVALID_ARGUMENT, "%s: written by anvil %.*s, this is anvil %s: compile again",
             fn, (int)(version_len > 64 ? 64 : version_len), version, writer_version);
  AV_REQUIRE(take(&p, &left, &format, &format_len) && take(&p, &left, &code, &code_len) &&
                 take(&p, &left, &options, &options_len),
             AV_INVALID_ARGUMENT, "%s: truncated or corrupt serialized executable", fn);
  AV_REQUIRE(left == 0, AV_INVALID_ARGUMENT, "%s: %zu trailing bytes after the executable", fn,
             left);
  if (AV_HAS(args, PJRT_Executable_DeserializeAndLoad_Args,
             overridden_serialized_compile_options_size) &&
      args->overridden_serialized_compile_options &&
      args->overridden_serialized_compile_options_size > 0) {
    options = args->overridden_serialized_compile_options;
    options_len = args->overridden_serialized_compile_options_size;
  }
  return av_compile_loaded(args->client, fn, format, format_len, code, code_len, options,
                           options_len, &args->loaded_executable);
}

PJRT_Error *av_PJRT_Executable_GetCompileOptions(PJRT_Executable_GetCompileOptions_Args *args) {
  AV_ARGS(args, PJRT_Executable_GetCompileOptions_Args);
  const char *fn = "PJRT_Executable_GetCompileOptions";
  AV_REQUIRE(args->executable && args->executable->core, AV_INVALID_ARGUMENT,
             "%s: executable is NULL", fn);
  const av_exec_core *c = args->executable->core;
  char *copy = malloc(c->source_options_size ? c->source_options_size : 1);
  AV_REQUIRE(copy, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (compile options)");
  if (c->source_options_size) memcpy(copy, c->source_options, c->source_options_size);
  args->serialized_bytes = copy;
  args->serialized_bytes_size = c->source_options_size;
  args->serialized_compile_options = (PJRT_SerializedCompileOptions *)copy;
  args->serialized_compile_options_deleter = free_options;
  return NULL;
}
