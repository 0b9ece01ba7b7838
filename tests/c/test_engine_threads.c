/* One compiled program run from several threads at once: the plan is shared and immutable,
 * every run has its own frame, so all runs must give the same (hand-checked) answer. */
#include <pthread.h>

#include "test_engine_util.h"

enum { THREADS = 4, RUNS = 200 };

typedef struct job {
  av_program *p;
  int failures;
} job;

static void *worker(void *arg) {
  job *j = arg;
  for (int r = 0; r < RUNS; r++) {
    av_tensor out;
    av_diag d;
    av_diag_init(&d);
    if (av_program_execute(j->p, 0, NULL, &out, &d) != AV_OK) {
      j->failures++;
      continue;
    }
    int32_t v;
    memcpy(&v, out.storage->data, sizeof v);
    if (v != 55) j->failures++;
    av_storage_release(out.storage);
  }
  return NULL;
}

/* while (i < 10) { i += 1; s += i } -> 55, with the loop bound and step captured */
static av_module *sum_program(void) {
  av_module *m = av_module_new();
  const av_type *si = ty(m, AV_DT_S32, 0), *pr = ty(m, AV_DT_PRED, 0);
  const av_type *two[2] = {si, si};
  tb t = tb_new(m, 1, &si);
  int32_t zero = 0, one = 1, ten = 10;
  av_value *z = tb_const(&t, si, &zero, 4);
  av_value *c10 = tb_const(&t, si, &ten, 4), *c1 = tb_const(&t, si, &one, 4);
  av_op *w = av_op_new(m, "stablehlo.while", 2, 2, two, 0, 2);
  w->operands[0] = z;
  w->operands[1] = z;
  av_block *cb = av_region_add_block(m, &w->regions[0], 2, two);
  av_named_attr dir = {"comparison_direction", av_attr_string(m, AV_ATTR_ENUM, "LT", 2)};
  av_value *ci[2] = {&cb->args[0], c10};
  av_value *lt = &tb_op(cb, m, "stablehlo.compare", 2, ci, 1, &pr, 1, &dir, 0)->results[0];
  tb_return(cb, m, "stablehlo.return", 1, &lt);
  av_block *bb = av_region_add_block(m, &w->regions[1], 2, two);
  av_value *ii[2] = {&bb->args[0], c1};
  av_value *i1 = &tb_op(bb, m, "stablehlo.add", 2, ii, 1, &si, 0, NULL, 0)->results[0];
  av_value *si_[2] = {&bb->args[1], i1};
  av_value *s1 = &tb_op(bb, m, "stablehlo.add", 2, si_, 1, &si, 0, NULL, 0)->results[0];
  av_value *ret[2] = {i1, s1};
  tb_return(bb, m, "stablehlo.return", 2, ret);
  av_block_append(t.b, w);
  av_value *res = &w->results[1];
  tb_return(t.b, m, "func.return", 1, &res);
  return m;
}

static void test_concurrent_runs(void **state) {
  (void)state;
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_from_module(sum_program(), NULL, &d);
  if (!p) fail_msg("%s", d.msg);
  pthread_t th[THREADS];
  job jobs[THREADS];
  for (int i = 0; i < THREADS; i++) {
    jobs[i].p = p;
    jobs[i].failures = 0;
    assert_int_equal(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(jobs[i].failures, 0);
  }
  av_program_free(p);
}

/* all_reduce(add) over 4 replicas, each run on its own thread as a device would be:
 * device d contributes [d, 1], everyone gets [0+1+2+3, 4]. */
typedef struct dev_job {
  av_program *p;
  int device;
  float out[2];
  av_code code;
} dev_job;

static void *device_worker(void *arg) {
  dev_job *j = arg;
  float in[2] = {(float)j->device, 1.0f};
  av_tensor x = {av_storage_alloc(sizeof in), AV_DT_F32, 1, {2}};
  memcpy(x.storage->data, in, sizeof in);
  av_tensor out;
  av_diag d;
  av_diag_init(&d);
  j->code = av_program_execute(j->p, j->device, &x, &out, &d);
  if (j->code == AV_OK) {
    memcpy(j->out, out.storage->data, sizeof j->out);
    av_storage_release(out.storage);
  }
  av_storage_release(x.storage);
  return NULL;
}

static void test_all_reduce_across_devices(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *t2 = ty(m, AV_DT_F32, 1, 2), *s = ty(m, AV_DT_F32, 0);
  const av_type *ft = av_type_function(m, 1, &t2, 1, &t2);
  av_func *fn = av_func_new(m, "main", ft);
  fn->is_public = true;
  av_block *b = av_region_add_block(m, &fn->body, 1, &t2);
  av_op *ar = av_op_new(m, "stablehlo.all_reduce", 1, 1, &t2, 0, 1);
  ar->operands[0] = &b->args[0];
  const av_type *two[2] = {s, s};
  av_block *body = av_region_add_block(m, &ar->regions[0], 2, two);
  av_value *ab[2] = {&body->args[0], &body->args[1]};
  av_value *sum = &tb_op(body, m, "stablehlo.add", 2, ab, 1, &s, 0, NULL, 0)->results[0];
  tb_return(body, m, "stablehlo.return", 1, &sum);
  av_block_append(b, ar);
  av_value *r = &ar->results[0];
  tb_return(b, m, "func.return", 1, &r);
  av_compile_options o = {.num_replicas = 4, .num_partitions = 1};
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_from_module(m, &o, &d);
  if (!p) fail_msg("%s", d.msg);
  for (int round = 0; round < 20; round++) {
    pthread_t th[4];
    dev_job jobs[4];
    for (int i = 0; i < 4; i++) {
      jobs[i] = (dev_job){p, i, {0, 0}, AV_UNKNOWN};
      assert_int_equal(pthread_create(&th[i], NULL, device_worker, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
      pthread_join(th[i], NULL);
      assert_int_equal(jobs[i].code, AV_OK);
      assert_true(jobs[i].out[0] == 6.0f && jobs[i].out[1] == 4.0f);
    }
  }
  av_program_free(p);
}

/* all_gather and collective_permute over 4 replicas; device d holds [d]:
 * all_gather gives [0, 1, 2, 3] everywhere, permute (i -> i+1 mod 4) gives [(d + 3) % 4]. */
typedef struct gp_job {
  av_program *p;
  int device;
  float out[5];
  av_code code;
} gp_job;

static void *gp_worker(void *arg) {
  gp_job *j = arg;
  float in[1] = {(float)j->device};
  av_tensor x = {av_storage_alloc(sizeof in), AV_DT_F32, 1, {1}};
  memcpy(x.storage->data, in, sizeof in);
  av_tensor out[2];
  av_diag d;
  av_diag_init(&d);
  j->code = av_program_execute(j->p, j->device, &x, out, &d);
  if (j->code == AV_OK) {
    memcpy(j->out, out[0].storage->data, 4 * sizeof(float));
    memcpy(j->out + 4, out[1].storage->data, sizeof(float));
    av_storage_release(out[0].storage);
    av_storage_release(out[1].storage);
  }
  av_storage_release(x.storage);
  return NULL;
}

static void test_all_gather_and_permute(void **state) {
  (void)state;
  av_module *m = av_module_new();
  const av_type *t1 = ty(m, AV_DT_F32, 1, 1), *t4 = ty(m, AV_DT_F32, 1, 4);
  const av_type *res[2] = {t4, t1};
  const av_type *ft = av_type_function(m, 1, &t1, 2, res);
  av_func *fn = av_func_new(m, "main", ft);
  fn->is_public = true;
  av_block *b = av_region_add_block(m, &fn->body, 1, &t1);
  av_value *x = &b->args[0];
  av_named_attr ga = {"all_gather_dim", av_attr_int(m, 0, NULL)};
  av_value *g = &tb_op(b, m, "stablehlo.all_gather", 1, &x, 1, &t4, 1, &ga, 0)->results[0];
  int64_t pairs[8] = {0, 1, 1, 2, 2, 3, 3, 0};
  int64_t pdims[2] = {4, 2};
  const av_type *pt = av_type_tensor(m, AV_DT_S64, 2, pdims);
  av_named_attr pa = {"source_target_pairs", av_attr_dense(m, pt, pairs, sizeof pairs, false, false)};
  av_value *pm = &tb_op(b, m, "stablehlo.collective_permute", 1, &x, 1, &t1, 1, &pa, 0)->results[0];
  av_value *outs[2] = {g, pm};
  tb_return(b, m, "func.return", 2, outs);
  av_compile_options o = {.num_replicas = 4, .num_partitions = 1};
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_from_module(m, &o, &d);
  if (!p) fail_msg("%s", d.msg);
  for (int round = 0; round < 10; round++) {
    pthread_t th[4];
    gp_job jobs[4];
    for (int i = 0; i < 4; i++) {
      jobs[i] = (gp_job){p, i, {0}, AV_UNKNOWN};
      assert_int_equal(pthread_create(&th[i], NULL, gp_worker, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
      pthread_join(th[i], NULL);
      assert_int_equal(jobs[i].code, AV_OK);
      for (int k = 0; k < 4; k++) assert_true(jobs[i].out[k] == (float)k);
      assert_true(jobs[i].out[4] == (float)((i + 3) % 4));
    }
  }
  av_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_concurrent_runs),
                                     cmocka_unit_test(test_all_reduce_across_devices),
                                     cmocka_unit_test(test_all_gather_and_permute)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
