/* What a Swift Task does: work started on one thread is continued and
 * evaluated on others. 64 hops, each on a new thread that exits before the
 * next starts; the state (arrays, a stream, a compiled function) is built
 * on one hop and used on later ones. Some hops start async work that a
 * later hop (another thread) waits for. Measures: the final values, and one
 * trace of the compiled step across all hops. */
#include "common.h"

#define HOPS 64
#define N 16

static atomic_int traces;

/* step(x) = x + 1 */
static ferrox_status step(ferrox_vector_array **res, const ferrox_vector_array *args,
                          void *payload, ferrox_error **err) {
  (void)payload;
  atomic_fetch_add(&traces, 1);
  ferrox_array *x = NULL, *one = NULL;
  ferrox_status st = ferrox_vector_array_get(&x, args, 0, err);
  if (!st) st = ferrox_array_new_float32(&one, 1.0f, err);
  if (!st) st = ferrox_add(&x, x, one, NULL, err);
  if (!st) st = ferrox_vector_array_new(res, err);
  if (!st) st = ferrox_vector_array_append(*res, x, err);
  ferrox_array_free(x);
  ferrox_array_free(one);
  return st;
}

struct task {
  ferrox_stream *stream;
  ferrox_compiled *step;
  ferrox_array *x;
  int hop;
};

static void *hop(void *arg) {
  struct task *t = arg;
  if (t->hop == 0) {
    ferrox_closure *c = NULL;
    TRY(ferrox_stream_new(&t->stream, NULL, &E));
    TRY(ferrox_closure_new(&c, step, NULL, NULL, &E));
    TRY(ferrox_compile(&t->step, c, false, &E));
    ferrox_closure_free(c);
    t->x = vec_f32(N, 1.0f);
  }
  /* Continue the graph built on earlier threads. */
  ferrox_vector_array *in = vec1(t->x), *out = NULL;
  TRY(ferrox_compiled_call(&out, t->step, in, t->stream, &E));
  ferrox_array *y = first(out);
  ferrox_vector_array_free(in);
  ferrox_vector_array_free(out);
  ferrox_array_free(t->x);
  t->x = y;
  switch (t->hop % 4) {
    case 0: { /* start async work; a later hop on another thread waits */
      ferrox_vector_array *v = vec1(t->x);
      TRY(ferrox_async_eval(v, &E));
      ferrox_vector_array_free(v);
      break;
    }
    case 1: TRY(ferrox_array_eval(t->x, &E)); break;
    case 2: TRY(ferrox_synchronize(t->stream, &E)); break;
    default: break; /* leave it lazy for the next thread */
  }
  return NULL;
}

int main(void) {
  watchdog(60);
  struct task t = {0};
  for (int i = 0; i < HOPS; i++) {
    t.hop = i;
    pthread_t th;
    pthread_create(&th, NULL, hop, &t);
    pthread_join(th, NULL); /* the hop's thread is gone before the next */
  }
  float *v = read_f32(t.x); /* read on the main thread */
  for (int i = 0; i < N; i++) {
    if (v[i] != (float)i + HOPS) {
      fprintf(stderr, "element %d is %f, want %d\n", i, v[i], i + HOPS);
      exit(1);
    }
  }
  free(v);
  EXPECT(atomic_load(&traces) == 1);
  ferrox_array_free(t.x);
  ferrox_compiled_free(t.step);
  ferrox_stream_free(t.stream);
  return 0;
}
