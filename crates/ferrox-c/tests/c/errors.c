/* Error paths: statuses and messages, per call, with no global handler.
 * Measures: a shape mismatch is FERROX_ERROR_SHAPE and its message names
 * the op and both shapes; a callback's error status and message propagate
 * through apply, compile (nothing cached, the next call traces again) and
 * vjp; NULL arguments and bad codes are errors; an error slot is reused. */
#include "common.h"

static atomic_int calls;

static ferrox_status failing(ferrox_vector_array **res, const ferrox_vector_array *args,
                             void *p, ferrox_error **err) {
  (void)res;
  (void)args;
  (void)p;
  atomic_fetch_add(&calls, 1);
  *err = ferrox_error_new(7, "boom from C");
  return 7;
}

static void expect_error(ferrox_status st, ferrox_error *e, ferrox_status want,
                         const char *a, const char *b, const char *c) {
  const char *msg = ferrox_error_message(e);
  if (st != want || ferrox_error_status(e) != want || !msg || !strstr(msg, a) ||
      (b && !strstr(msg, b)) || (c && !strstr(msg, c))) {
    fprintf(stderr, "status %d (want %d), message: %s\n", st, want, msg ? msg : "(none)");
    exit(1);
  }
}

int main(void) {
  watchdog(30);
  ferrox_error *e = NULL;
  ferrox_array *a = NULL, *b = NULL, *r = NULL;
  int32_t s23[2] = {2, 3}, s4[1] = {4};
  TRY(ferrox_zeros(&a, s23, 2, FERROX_FLOAT32, NULL, &E));
  TRY(ferrox_zeros(&b, s4, 1, FERROX_FLOAT32, NULL, &E));

  /* Shape mismatch: names the op and the shapes; *res untouched. */
  ferrox_status st = ferrox_add(&r, a, b, NULL, &e);
  expect_error(st, e, FERROX_ERROR_SHAPE, "add", "[2, 3]", "[4]");
  EXPECT(r == NULL);
  /* The slot is reused: the old error is freed, a new one written. */
  st = ferrox_matmul(&r, a, a, NULL, &e);
  expect_error(st, e, FERROX_ERROR_SHAPE, "matmul", "[2, 3]", NULL);
  /* Reshape to a size that does not fit. */
  int32_t s5[1] = {5};
  st = ferrox_reshape(&r, a, s5, 1, NULL, &e);
  expect_error(st, e, FERROX_ERROR_SHAPE, "reshape", "5", NULL);
  /* Axis out of range. */
  int32_t ax[1] = {4};
  st = ferrox_sum(&r, a, ax, 1, false, NULL, &e);
  expect_error(st, e, FERROX_ERROR_AXIS, "sum", "4", NULL);

  /* NULL arguments and bad codes. */
  st = ferrox_exp(&r, NULL, NULL, &e);
  expect_error(st, e, FERROX_ERROR_NULL_POINTER, "ferrox_exp", "`a` is NULL", NULL);
  st = ferrox_exp(NULL, a, NULL, &e);
  expect_error(st, e, FERROX_ERROR_NULL_POINTER, "`res` is NULL", NULL, NULL);
  st = ferrox_astype(&r, a, 99, NULL, &e);
  expect_error(st, e, FERROX_ERROR_INVALID_ARGUMENT, "dtype code 99", NULL, NULL);
  int32_t neg[1] = {-2};
  st = ferrox_zeros(&r, neg, 1, FERROX_FLOAT32, NULL, &e);
  expect_error(st, e, FERROX_ERROR_INVALID_ARGUMENT, "negative dimension -2", NULL, NULL);
  EXPECT(ferrox_add(&r, a, b, NULL, NULL) == FERROX_ERROR_SHAPE); /* no error slot */
  EXPECT(ferrox_error_message(NULL) == NULL);
  EXPECT(ferrox_error_status(NULL) == FERROX_ERROR_INVALID_HANDLE);
  EXPECT(ferrox_array_ndim(NULL) == 0 && ferrox_array_dtype(NULL) == -1);
  /* An optional argument that is not NULL must be a live handle too: a
   * readable block that ferrox did not make is refused, not read. */
  static uint64_t not_a_handle[8];
  st = ferrox_fast_rms_norm(&r, a, (const ferrox_array *)not_a_handle, 1e-5f, NULL, &e);
  expect_error(st, e, FERROX_ERROR_INVALID_HANDLE, "ferrox_fast_rms_norm", "`weight`", NULL);
  st = ferrox_random_gumbel(&r, neg, 0, FERROX_FLOAT32, (const ferrox_array *)not_a_handle, NULL, &e);
  expect_error(st, e, FERROX_ERROR_INVALID_HANDLE, "`key`", NULL, NULL);

  /* A failing callback, called directly, compiled and differentiated. */
  ferrox_closure *f = NULL;
  ferrox_compiled *cf = NULL;
  ferrox_vector_array *args = vec1(a), *out = NULL, *cts = NULL;
  TRY(ferrox_closure_new(&f, failing, NULL, NULL, &E));
  st = ferrox_closure_apply(&out, f, args, NULL, &e);
  expect_error(st, e, FERROX_ERROR_CALLBACK, "status 7", "boom from C", NULL);
  TRY(ferrox_compile(&cf, f, false, &E));
  size_t before = 0, after = 0;
  CHECK(ferrox_compile_cache_len(&before, NULL));
  for (int i = 0; i < 2; i++) {
    st = ferrox_compiled_call(&out, cf, args, NULL, &e);
    expect_error(st, e, FERROX_ERROR_CALLBACK, "boom from C", NULL, NULL);
  }
  CHECK(ferrox_compile_cache_len(&after, NULL));
  EXPECT(after == before && out == NULL);
  st = ferrox_vjp(&out, &cts, f, args, args, &e);
  expect_error(st, e, FERROX_ERROR_CALLBACK, "boom from C", NULL, NULL);
  EXPECT(atomic_load(&calls) == 4); /* apply, two traces (no entry kept), vjp */

  ferrox_error_free(e);
  ferrox_closure_free(f);
  ferrox_compiled_free(cf);
  ferrox_vector_array_free(args);
  ferrox_array_free(a);
  ferrox_array_free(b);
  return 0;
}
