/* Exported functions from C: export a C closure, import it, call it from
 * 8 threads at once; an exporter with two traces; errors for a signature
 * exported twice, for inputs no trace matches and for a file that is not
 * a function. Also checkpoint and custom_function (a custom vjp). */
#include <math.h>

#include "common.h"

/* f(x) = 2x + 1 */
static ferrox_status affine(ferrox_vector_array **res, const ferrox_vector_array *args, void *p,
                            ferrox_error **err) {
  (void)p;
  ferrox_array *x = NULL, *two = NULL, *one = NULL;
  ferrox_status st = ferrox_vector_array_get(&x, args, 0, err);
  if (!st) st = ferrox_array_new_float32(&two, 2.0f, err);
  if (!st) st = ferrox_array_new_float32(&one, 1.0f, err);
  if (!st) st = ferrox_multiply(&x, x, two, NULL, err);
  if (!st) st = ferrox_add(&x, x, one, NULL, err);
  if (!st) st = ferrox_vector_array_new(res, err);
  if (!st) st = ferrox_vector_array_append(*res, x, err);
  ferrox_array_free(x);
  ferrox_array_free(two);
  ferrox_array_free(one);
  return st;
}

/* sum(x * x) */
static ferrox_status square_sum(ferrox_vector_array **res, const ferrox_vector_array *args,
                                void *p, ferrox_error **err) {
  (void)p;
  ferrox_array *x = NULL;
  ferrox_status st = ferrox_vector_array_get(&x, args, 0, err);
  if (!st) st = ferrox_square(&x, x, NULL, err);
  if (!st) st = ferrox_sum(&x, x, NULL, 0, false, NULL, err);
  if (!st) st = ferrox_vector_array_new(res, err);
  if (!st) st = ferrox_vector_array_append(*res, x, err);
  ferrox_array_free(x);
  return st;
}

/* A vjp rule for square_sum that claims the gradient is 3 * cotangent:
 * args = [x, cotangent, output]. */
static ferrox_status three_ct(ferrox_vector_array **res, const ferrox_vector_array *args, void *p,
                              ferrox_error **err) {
  (void)p;
  ferrox_array *x = NULL, *ct = NULL, *three = NULL, *g = NULL;
  ferrox_status st = ferrox_vector_array_size(args) == 3 ? FERROX_OK : FERROX_ERROR_VALUE;
  if (!st) st = ferrox_vector_array_get(&x, args, 0, err);
  if (!st) st = ferrox_vector_array_get(&ct, args, 1, err);
  if (!st) st = ferrox_array_new_float32(&three, 3.0f, err);
  if (!st) st = ferrox_full_like(&g, x, 1.0, NULL, err);
  if (!st) st = ferrox_multiply(&g, g, ct, NULL, err);
  if (!st) st = ferrox_multiply(&g, g, three, NULL, err);
  if (!st) st = ferrox_vector_array_new(res, err);
  if (!st) st = ferrox_vector_array_append(*res, g, err);
  ferrox_array_free(x);
  ferrox_array_free(ct);
  ferrox_array_free(three);
  ferrox_array_free(g);
  return st;
}

static ferrox_vector_array *args_of(const float *v, int32_t n) {
  ferrox_array *x = NULL;
  TRY(ferrox_array_new_data(&x, v, &n, 1, FERROX_FLOAT32, &E));
  ferrox_vector_array *args = vec1(x);
  ferrox_array_free(x);
  return args;
}

static void expect_first(const ferrox_vector_array *out, const float *want, size_t n) {
  ferrox_array *y = first(out);
  EXPECT(ferrox_array_size(y) == n);
  float got[16];
  TRY(ferrox_array_copy_to(y, got, n * sizeof(float), &E));
  for (size_t i = 0; i < n; i++) EXPECT(fabsf(got[i] - want[i]) < 1e-5f);
  ferrox_array_free(y);
}

#define THREADS 8
struct caller {
  const ferrox_imported_function *f;
  int ok;
};

static void *call_many(void *arg) {
  struct caller *c = arg;
  for (int round = 0; round < 50; round++) {
    float x[3] = {(float)round, 1, -1};
    float want[3] = {2.0f * (float)round + 1, 3, -1};
    ferrox_vector_array *args = args_of(x, 3), *out = NULL;
    TRY(ferrox_imported_function_apply(&out, c->f, args, NULL, NULL, &E));
    expect_first(out, want, 3);
    ferrox_vector_array_free(args);
    ferrox_vector_array_free(out);
  }
  c->ok = 1;
  return NULL;
}

int main(int argc, char **argv) {
  watchdog(120);
  const char *dir = argc > 1 ? argv[1] : "/tmp";
  char path[512], path2[512];
  snprintf(path, sizeof path, "%s/affine.fxfn", dir);
  snprintf(path2, sizeof path2, "%s/affine2.fxfn", dir);

  ferrox_closure *f = NULL;
  TRY(ferrox_closure_new(&f, affine, NULL, NULL, &E));
  float x3[3] = {1, 2, 3}, want3[3] = {3, 5, 7};
  ferrox_vector_array *args3 = args_of(x3, 3), *out = NULL;
  TRY(ferrox_export_function(path, f, args3, false, "v1", &E));

  ferrox_imported_function *g = NULL;
  TRY(ferrox_imported_function_new(&g, path, &E));
  EXPECT(strcmp(ferrox_imported_function_metadata(g), "v1") == 0);
  TRY(ferrox_imported_function_apply(&out, g, args3, NULL, NULL, &E));
  expect_first(out, want3, 3);

  /* Another shape matches no trace of a shaped export. */
  float x2[2] = {0, 1};
  ferrox_vector_array *args2 = args_of(x2, 2);
  ferrox_error *err = NULL;
  EXPECT(ferrox_imported_function_apply(&out, g, args2, NULL, NULL, &err) != FERROX_OK);
  EXPECT(err != NULL && strlen(ferrox_error_message(err)) > 0);
  ferrox_error_free(err);

  /* 8 threads share the imported function. */
  pthread_t threads[THREADS];
  struct caller callers[THREADS];
  for (int i = 0; i < THREADS; i++) {
    callers[i] = (struct caller){g, 0};
    EXPECT(pthread_create(&threads[i], NULL, call_many, &callers[i]) == 0);
  }
  for (int i = 0; i < THREADS; i++) {
    EXPECT(pthread_join(threads[i], NULL) == 0);
    EXPECT(callers[i].ok);
  }

  /* An exporter with two signatures; the same one twice is an error. */
  ferrox_function_exporter *ex = NULL;
  TRY(ferrox_function_exporter_new(&ex, path2, f, false, NULL, &E));
  TRY(ferrox_function_exporter_apply(ex, args3, &E));
  TRY(ferrox_function_exporter_apply(ex, args2, &E));
  err = NULL;
  EXPECT(ferrox_function_exporter_apply(ex, args2, &err) == FERROX_ERROR_VALUE);
  ferrox_error_free(err);
  CHECK(ferrox_function_exporter_free(ex));
  ferrox_imported_function *g2 = NULL;
  TRY(ferrox_imported_function_new(&g2, path2, &E));
  EXPECT(strcmp(ferrox_imported_function_metadata(g2), "") == 0);
  float want2[2] = {1, 3};
  TRY(ferrox_imported_function_apply(&out, g2, args2, NULL, NULL, &E));
  expect_first(out, want2, 2);

  /* Shapeless: one trace for every length. */
  TRY(ferrox_export_function(path2, f, args3, true, NULL, &E));
  CHECK(ferrox_imported_function_free(g2));
  g2 = NULL;
  TRY(ferrox_imported_function_new(&g2, path2, &E));
  TRY(ferrox_imported_function_apply(&out, g2, args2, NULL, NULL, &E));
  expect_first(out, want2, 2);

  /* A file that is not an exported function. */
  FILE *junk = fopen(path2, "wb");
  EXPECT(junk != NULL);
  fputs("not a function", junk);
  fclose(junk);
  ferrox_imported_function *bad = NULL;
  err = NULL;
  EXPECT(ferrox_imported_function_new(&bad, path2, &err) != FERROX_OK && bad == NULL);
  ferrox_error_free(err);

  /* checkpoint: the same gradient (2x); custom_function: the rule's 3. */
  ferrox_closure *ss = NULL, *ck = NULL, *dck = NULL, *custom = NULL, *rule = NULL, *dcustom = NULL;
  TRY(ferrox_closure_new(&ss, square_sum, NULL, NULL, &E));
  TRY(ferrox_checkpoint(&ck, ss, &E));
  int32_t arg0[1] = {0};
  TRY(ferrox_grad(&dck, ck, arg0, 1, &E));
  TRY(ferrox_closure_apply(&out, dck, args3, NULL, &E));
  float twice[3] = {2, 4, 6}, threes[3] = {3, 3, 3};
  expect_first(out, twice, 3);
  TRY(ferrox_closure_new(&rule, three_ct, NULL, NULL, &E));
  TRY(ferrox_custom_function(&custom, ss, rule, NULL, &E));
  TRY(ferrox_grad(&dcustom, custom, arg0, 1, &E));
  TRY(ferrox_closure_apply(&out, dcustom, args3, NULL, &E));
  expect_first(out, threes, 3);
  float fourteen[1] = {14};
  TRY(ferrox_closure_apply(&out, custom, args3, NULL, &E));
  expect_first(out, fourteen, 1);

  ferrox_closure *closures[] = {f, ss, ck, dck, custom, rule, dcustom};
  for (size_t i = 0; i < sizeof closures / sizeof *closures; i++) ferrox_closure_free(closures[i]);
  ferrox_imported_function_free(g);
  ferrox_imported_function_free(g2);
  ferrox_vector_array_free(args3);
  ferrox_vector_array_free(args2);
  ferrox_vector_array_free(out);
  remove(path);
  remove(path2);
  return 0;
}
