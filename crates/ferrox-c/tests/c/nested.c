/* A C callback that calls another compiled closure while it is being
 * traced, which calls a third: outer(x) = inner(x) * 2 with
 * inner(x) = innermost(x) + 1 and innermost(x) = x * x. 8 threads call
 * outer at once, others call inner and innermost directly at the same
 * time. Measures: no deadlock (watchdog), right values, one trace of
 * outer (the nested calls are inlined into it). */
#include "common.h"

#define THREADS 8

static atomic_int outer_traces;
static ferrox_compiled *outer, *inner, *innermost;
static pthread_barrier_t barrier;

static ferrox_status call1(ferrox_compiled *f, const ferrox_array *x, ferrox_array **y,
                           ferrox_error **err) {
  ferrox_vector_array *in = NULL, *out = NULL;
  ferrox_status st = ferrox_vector_array_new(&in, err);
  if (!st) st = ferrox_vector_array_append(in, x, err);
  if (!st) st = ferrox_compiled_call(&out, f, in, NULL, err);
  if (!st) st = ferrox_vector_array_get(y, out, 0, err);
  ferrox_vector_array_free(in);
  ferrox_vector_array_free(out);
  return st;
}

static ferrox_status wrap(ferrox_vector_array **res, ferrox_array *y, ferrox_error **err) {
  ferrox_status st = ferrox_vector_array_new(res, err);
  if (!st) st = ferrox_vector_array_append(*res, y, err);
  ferrox_array_free(y);
  return st;
}

static ferrox_status innermost_body(ferrox_vector_array **res, const ferrox_vector_array *args,
                                    void *p, ferrox_error **err) {
  (void)p;
  ferrox_array *x = NULL;
  ferrox_status st = ferrox_vector_array_get(&x, args, 0, err);
  if (!st) st = ferrox_square(&x, x, NULL, err);
  return st ? st : wrap(res, x, err);
}

static ferrox_status inner_body(ferrox_vector_array **res, const ferrox_vector_array *args,
                                void *p, ferrox_error **err) {
  (void)p;
  ferrox_array *x = NULL, *y = NULL, *one = NULL;
  ferrox_status st = ferrox_vector_array_get(&x, args, 0, err);
  if (!st) st = call1(innermost, x, &y, err);
  if (!st) st = ferrox_array_new_float32(&one, 1.0f, err);
  if (!st) st = ferrox_add(&y, y, one, NULL, err);
  ferrox_array_free(x);
  ferrox_array_free(one);
  return st ? st : wrap(res, y, err);
}

static ferrox_status outer_body(ferrox_vector_array **res, const ferrox_vector_array *args,
                                void *p, ferrox_error **err) {
  (void)p;
  atomic_fetch_add(&outer_traces, 1);
  ferrox_array *x = NULL, *y = NULL, *two = NULL;
  ferrox_status st = ferrox_vector_array_get(&x, args, 0, err);
  if (!st) st = call1(inner, x, &y, err);
  if (!st) st = ferrox_array_new_float32(&two, 2.0f, err);
  if (!st) st = ferrox_multiply(&y, y, two, NULL, err);
  ferrox_array_free(x);
  ferrox_array_free(two);
  return st ? st : wrap(res, y, err);
}

static ferrox_compiled *make(ferrox_closure_fn body) {
  ferrox_closure *c = NULL;
  ferrox_compiled *f = NULL;
  TRY(ferrox_closure_new(&c, body, NULL, NULL, &E));
  TRY(ferrox_compile(&f, c, false, &E));
  ferrox_closure_free(c);
  return f;
}

static void *worker(void *arg) {
  int which = (int)(intptr_t)arg % 3;
  ferrox_compiled *f = which == 0 ? outer : which == 1 ? inner : innermost;
  ferrox_array *x = vec_f32(6, 1.0f), *y = NULL;
  pthread_barrier_wait(&barrier);
  TRY(call1(f, x, &y, &E));
  float *v = read_f32(y);
  for (int i = 0; i < 6; i++) {
    float sq = (float)(i * i);
    float want = which == 0 ? 2.0f * (sq + 1.0f) : which == 1 ? sq + 1.0f : sq;
    EXPECT(v[i] == want);
  }
  free(v);
  ferrox_array_free(x);
  ferrox_array_free(y);
  return NULL;
}

int main(void) {
  watchdog(30);
  innermost = make(innermost_body);
  inner = make(inner_body);
  outer = make(outer_body);
  pthread_barrier_init(&barrier, NULL, 3 * THREADS);
  pthread_t t[3 * THREADS];
  for (int i = 0; i < 3 * THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < 3 * THREADS; i++) pthread_join(t[i], NULL);
  EXPECT(atomic_load(&outer_traces) == 1);
  ferrox_compiled_free(outer);
  ferrox_compiled_free(inner);
  ferrox_compiled_free(innermost);
  pthread_barrier_destroy(&barrier);
  return 0;
}
