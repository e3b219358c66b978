/* A compiled closure traced on the main thread, called by 4 workers through
 * their own handles (clones), and freed on threads other than the tracer
 * while the others still call it. Measures: one trace in all; no crash;
 * once the last handle is gone (on a worker) the cache entry is gone and
 * the payload destructor ran once; a new compiled closure with the same
 * signature is traced afresh (no stale replay of the freed one). */
#include "common.h"

#define WORKERS 4
#define CALLS 40

static atomic_int traces_a, traces_b, dtor_runs;

static ferrox_status scale_by(ferrox_vector_array **res, const ferrox_vector_array *args,
                              void *payload, ferrox_error **err) {
  float k = *(float *)payload;
  atomic_fetch_add(k == 2.0f ? &traces_a : &traces_b, 1);
  ferrox_array *x = NULL, *kk = NULL, *y = NULL;
  ferrox_status st = ferrox_vector_array_get(&x, args, 0, err);
  if (!st) st = ferrox_array_new_float32(&kk, k, err);
  if (!st) st = ferrox_multiply(&y, x, kk, NULL, err);
  if (!st) st = ferrox_vector_array_new(res, err);
  if (!st) st = ferrox_vector_array_append(*res, y, err);
  ferrox_array_free(x);
  ferrox_array_free(kk);
  ferrox_array_free(y);
  return st;
}

static void release(void *payload) {
  atomic_fetch_add(&dtor_runs, 1);
  free(payload);
}

static ferrox_compiled *compiled_scale(float k) {
  float *p = malloc(sizeof *p);
  *p = k;
  ferrox_closure *c = NULL;
  ferrox_compiled *f = NULL;
  TRY(ferrox_closure_new(&c, scale_by, p, release, &E));
  TRY(ferrox_compile(&f, c, false, &E));
  ferrox_closure_free(c);
  return f;
}

static void expect_scaled(ferrox_compiled *f, float k) {
  ferrox_array *x = vec_f32(5, 1.0f);
  ferrox_vector_array *in = vec1(x), *out = NULL;
  TRY(ferrox_compiled_call(&out, f, in, NULL, &E));
  ferrox_array *y = first(out);
  float *v = read_f32(y);
  for (int i = 0; i < 5; i++) EXPECT(v[i] == k * (float)i);
  free(v);
  ferrox_array_free(y);
  ferrox_vector_array_free(out);
  ferrox_vector_array_free(in);
  ferrox_array_free(x);
}

static ferrox_compiled *original;
static atomic_int calls_done;

static void *worker(void *arg) {
  ferrox_compiled *mine = arg;
  for (int i = 0; i < CALLS; i++) {
    expect_scaled(mine, 2.0f);
    atomic_fetch_add(&calls_done, 1);
  }
  ferrox_compiled_free(mine); /* the last of these frees the function */
  return NULL;
}

static void *freer(void *arg) {
  (void)arg;
  while (atomic_load(&calls_done) < WORKERS * CALLS / 4) usleep(100);
  ferrox_compiled_free(original); /* the tracer's handle, on another thread */
  return NULL;
}

int main(void) {
  watchdog(30);
  size_t base = 0, traced = 0, after = 0;
  CHECK(ferrox_compile_cache_len(&base, NULL));
  original = compiled_scale(2.0f);
  expect_scaled(original, 2.0f); /* traced here, on the main thread */
  CHECK(ferrox_compile_cache_len(&traced, NULL));
  EXPECT(traced == base + 1);

  pthread_t t[WORKERS], f;
  for (int i = 0; i < WORKERS; i++) {
    ferrox_compiled *clone = NULL;
    TRY(ferrox_compiled_clone(&clone, original, &E));
    pthread_create(&t[i], NULL, worker, clone);
  }
  pthread_create(&f, NULL, freer, NULL);
  pthread_join(f, NULL);
  for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);

  CHECK(ferrox_compile_cache_len(&after, NULL));
  if (after != base || atomic_load(&traces_a) != 1 || atomic_load(&dtor_runs) != 1) {
    fprintf(stderr, "cache %zu -> %zu -> %zu, traces %d, destructor runs %d\n", base, traced,
            after, atomic_load(&traces_a), atomic_load(&dtor_runs));
    exit(1);
  }
  /* Same signature, new function: it must trace, not replay x * 2. */
  ferrox_compiled *g = compiled_scale(3.0f);
  expect_scaled(g, 3.0f);
  EXPECT(atomic_load(&traces_b) == 1);
  ferrox_compiled_free(g);
  EXPECT(atomic_load(&dtor_runs) == 2);
  return 0;
}
