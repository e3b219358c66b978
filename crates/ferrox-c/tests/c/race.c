/* 16 threads race, released together by a barrier, on the first call of one
 * compiled closure: the closure must be traced exactly once (counted inside
 * the C callback with an atomic), and every thread gets the right values.
 * Then the same with a shapeless compile and a different length per thread:
 * still one trace. */
#include "common.h"

#define THREADS 16
#define N 8

static atomic_int traces;
static pthread_barrier_t barrier;
static ferrox_compiled *fn;

/* f(x) = 2x + 1 */
static ferrox_status body(ferrox_vector_array **res, const ferrox_vector_array *args,
                          void *payload, ferrox_error **err) {
  (void)payload;
  atomic_fetch_add(&traces, 1);
  usleep(20000); /* widen the window in which the others arrive */
  ferrox_array *x = NULL, *two = NULL, *one = NULL, *y = NULL;
  ferrox_status st = ferrox_vector_array_get(&x, args, 0, err);
  if (st) return st;
  CHECK(ferrox_array_new_float32(&two, 2.0f, NULL));
  CHECK(ferrox_array_new_float32(&one, 1.0f, NULL));
  if ((st = ferrox_multiply(&y, x, two, NULL, err))) return st;
  if ((st = ferrox_add(&y, y, one, NULL, err))) return st; /* result replaces y */
  st = ferrox_vector_array_new(res, err);
  if (!st) st = ferrox_vector_array_append(*res, y, err);
  ferrox_array_free(x);
  ferrox_array_free(two);
  ferrox_array_free(one);
  ferrox_array_free(y);
  return st;
}

static void *worker(void *arg) {
  int n = (int)(intptr_t)arg;
  ferrox_array *x = vec_f32(n, 1.0f);
  ferrox_vector_array *in = vec1(x), *out = NULL;
  pthread_barrier_wait(&barrier);
  TRY(ferrox_compiled_call(&out, fn, in, NULL, &E));
  ferrox_array *y = first(out);
  float *v = read_f32(y);
  for (int i = 0; i < n; i++) EXPECT(v[i] == 2.0f * (float)i + 1.0f);
  free(v);
  ferrox_array_free(y);
  ferrox_vector_array_free(out);
  ferrox_vector_array_free(in);
  ferrox_array_free(x);
  return NULL;
}

static void race(bool shapeless) {
  atomic_store(&traces, 0);
  ferrox_closure *c = NULL;
  TRY(ferrox_closure_new(&c, body, NULL, NULL, &E));
  TRY(ferrox_compile(&fn, c, shapeless, &E));
  ferrox_closure_free(c); /* the compiled function keeps its own reference */
  pthread_barrier_init(&barrier, NULL, THREADS);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    int n = shapeless ? N + i : N;
    pthread_create(&t[i], NULL, worker, (void *)(intptr_t)n);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&barrier);
  size_t counted = 0;
  TRY(ferrox_compiled_traces(&counted, fn, &E));
  if (atomic_load(&traces) != 1 || counted != 1) {
    fprintf(stderr, "shapeless=%d: %d callback traces, %zu counted by ferrox (want 1)\n",
            shapeless, atomic_load(&traces), counted);
    exit(1);
  }
  ferrox_compiled_free(fn);
  fn = NULL;
}

int main(void) {
  watchdog(30);
  race(false);
  race(true);
  return 0;
}
