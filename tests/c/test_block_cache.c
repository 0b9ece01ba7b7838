/* The block cache (util/block_cache.h) and storages drawn from it: a released block is
 * handed out again for a request of about its size, never for one it cannot hold or would
 * waste more than half of; the byte limit holds with the oldest blocks evicted; storages
 * keep the cache alive after its owner lets go; a program run reuses its outputs' blocks;
 * the per-device block accounting counts what a device holds and its peak. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "compiler/program.h"
#include "util/block_cache.h"
#include "util/storage.h"

static void test_reuse_by_size(void **state) {
  (void)state;
  av_block_cache *c = av_block_cache_new(1 << 20);
  assert_non_null(c);
  size_t sa, sb, s;
  void *a = av_block_cache_get(c, 100000, &sa), *b = av_block_cache_get(c, 300000, &sb);
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal(sa, 100000);
  memset(a, 1, sa); /* the blocks are real memory of the size said */
  memset(b, 2, sb);
  av_block_cache_put(c, a, sa);
  av_block_cache_put(c, b, sb);
  assert_int_equal(av_block_cache_held(c), 400000);
  /* too large for a, more than twice 120000 for b: a new block */
  void *n = av_block_cache_get(c, 120000, &s);
  assert_true(n != a && n != b);
  assert_int_equal(s, 120000);
  av_block_cache_put(c, n, s);
  /* 90000 fits a (100000) and n (120000): the smaller one */
  assert_ptr_equal(av_block_cache_get(c, 90000, &s), a);
  assert_int_equal(s, 100000);
  assert_int_equal(av_block_cache_held(c), 420000);
  av_block_cache_put(c, a, s);
  /* 200000: only b fits (n is too small, a too) */
  assert_ptr_equal(av_block_cache_get(c, 200000, &s), b);
  assert_int_equal(s, 300000);
  av_block_cache_put(c, b, s);
  av_block_cache_release(c); /* frees what it holds (ASan checks) */
}

static void test_limit_evicts_oldest(void **state) {
  (void)state;
  av_block_cache *c = av_block_cache_new(250000);
  size_t s1, s2, s3, s;
  void *b1 = av_block_cache_get(c, 100000, &s1), *b2 = av_block_cache_get(c, 100000, &s2),
       *b3 = av_block_cache_get(c, 100000, &s3);
  av_block_cache_put(c, b1, s1);
  av_block_cache_put(c, b2, s2);
  av_block_cache_put(c, b3, s3); /* 300000 > 250000: b1, the oldest, goes */
  assert_int_equal(av_block_cache_held(c), 200000);
  void *x = av_block_cache_get(c, 100000, &s), *y = av_block_cache_get(c, 100000, &s);
  assert_true((x == b2 && y == b3) || (x == b3 && y == b2));
  assert_int_equal(av_block_cache_held(c), 0);
  void *big = av_block_cache_get(c, 300000, &s);
  av_block_cache_put(c, big, s); /* over the limit by itself: freed, not kept */
  assert_int_equal(av_block_cache_held(c), 0);
  av_block_cache_put(c, x, 100000);
  av_block_cache_put(c, y, 100000);
  av_block_cache_release(c);
  av_block_cache *none = av_block_cache_new(0); /* keeps nothing */
  void *z = av_block_cache_get(none, 100000, &s);
  av_block_cache_put(none, z, s);
  assert_int_equal(av_block_cache_held(none), 0);
  av_block_cache_release(none);
}

static void test_storage_from_cache(void **state) {
  (void)state;
  av_block_cache *c = av_block_cache_new(64 << 20);
  av_storage *small = av_storage_alloc_cached(c, 100); /* below AV_BLOCK_CACHE_MIN: malloc */
  assert_null(small->cache);
  av_storage_release(small);
  av_storage *s = av_storage_alloc_cached(c, 1 << 20);
  assert_non_null(s);
  assert_ptr_equal(s->cache, c);
  assert_int_equal((uintptr_t)s->data % AV_STORAGE_ALIGN, 0);
  memset(s->data, 7, 1 << 20);
  av_block_cache_release(c); /* the owner lets go; the storage keeps the cache */
  av_storage_release(s);     /* the block returns to the cache, the cache is freed */
  c = av_block_cache_new(64 << 20);
  s = av_storage_alloc_cached(c, 1 << 20);
  uintptr_t was = (uintptr_t)s;
  av_storage_release(s);
  av_storage *t = av_storage_alloc_cached(c, (1 << 20) - 4096); /* the same block again */
  assert_int_equal((uintptr_t)t, was);
  av_storage_release(t);
  av_block_cache_release(c);
}

/* A program whose step output is large: its second run takes the block the first run's
 * output went back to once released, and the values are right both times. */
static void test_program_reuses_blocks(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%x: tensor<65536xf32>) -> tensor<65536xf32> {\n"
      "  %0 = stablehlo.multiply %x, %x : tensor<65536xf32>\n"
      "  return %0 : tensor<65536xf32>\n"
      "}\n";
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  assert_non_null(p);
  av_block_cache *c = av_block_cache_new(64 << 20);
  av_program_use_block_cache(p, c);
  av_tensor in = {0};
  in.dtype = AV_DT_F32;
  in.rank = 1;
  in.dims[0] = 65536;
  in.storage = av_storage_alloc_uninit(65536 * 4);
  float *x = in.storage->data;
  for (int i = 0; i < 65536; i++) x[i] = (float)(i % 100) * 0.5f;
  uintptr_t prev = 0;
  for (int run = 0; run < 2; run++) {
    av_tensor out;
    assert_int_equal(av_program_execute(p, 0, &in, &out, &d), AV_OK);
    const float *y = out.storage->data;
    for (int i = 0; i < 65536; i++)
      if (y[i] != x[i] * x[i]) fail_msg("run %d element %d: %g", run, i, y[i]);
    if (run == 1) assert_int_equal((uintptr_t)out.storage, prev);
    prev = (uintptr_t)out.storage;
    av_storage_release(out.storage);
  }
  assert_true(av_block_cache_held(c) >= 65536 * 4);
  av_storage_release(in.storage);
  av_program_free(p);
  av_block_cache_release(c);
}

/* A run's temporaries and result count for the device it runs for: the peak holds x, x * x
 * and its reverse at once; what the caller keeps stays counted. */
static void test_device_accounting(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%x: tensor<65536xf32>) -> tensor<65536xf32> {\n"
      "  %0 = stablehlo.multiply %x, %x : tensor<65536xf32>\n"
      "  %1 = stablehlo.reverse %0, dims = [0] : tensor<65536xf32>\n"
      "  %2 = stablehlo.add %1, %0 : tensor<65536xf32>\n"
      "  return %2 : tensor<65536xf32>\n"
      "}\n";
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  assert_non_null(p);
  av_block_cache *c = av_block_cache_new(64 << 20);
  av_program_use_block_cache(p, c);
  long long held, peak;
  assert_false(av_block_cache_device_bytes(c, 3, &held, &peak)); /* never seen */
  av_tensor in = {0};
  in.dtype = AV_DT_F32;
  in.rank = 1;
  in.dims[0] = 65536;
  in.storage = av_storage_alloc_cached_for(c, 3, 65536 * 4);
  memset(in.storage->data, 0, 65536 * 4);
  assert_true(av_block_cache_device_bytes(c, 3, &held, &peak));
  long long block = held;
  assert_true(block >= 65536 * 4 && block < 65536 * 4 + 4096);
  av_tensor out;
  assert_int_equal(av_program_execute_on(p, 0, 3, &in, NULL, NULL, &out, &d), AV_OK);
  assert_true(av_block_cache_device_bytes(c, 3, &held, &peak));
  assert_int_equal(held, 2 * block); /* the argument and the result */
  assert_true(peak >= 3 * block);   /* plus at least one temporary at a time */
  assert_true(peak <= 4 * block);
  av_block_cache_device_bytes(c, 2, &held, &peak);
  assert_int_equal(held, 0); /* other devices are not charged */
  av_storage_release(out.storage);
  av_storage_release(in.storage);
  assert_true(av_block_cache_device_bytes(c, 3, &held, &peak));
  assert_int_equal(held, 0);
  av_block_cache_reset_peak(c, 3);
  assert_true(av_block_cache_device_bytes(c, 3, &held, &peak));
  assert_int_equal(peak, 0);
  av_program_free(p);
  av_block_cache_release(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reuse_by_size),
      cmocka_unit_test(test_limit_evicts_oldest),
      cmocka_unit_test(test_storage_from_cache),
      cmocka_unit_test(test_program_reuses_blocks),
      cmocka_unit_test(test_device_accounting),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
