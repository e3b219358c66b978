/* Buffers lent with ferrox_array_new_data_managed: read in place (the
 * array's data pointer is the caller's), released exactly once when the
 * last array reading them is freed, on the thread that frees it, also when
 * that is another thread; misaligned and bool buffers copied and released
 * at once; a failing call releases too. */
#include "common.h"

struct loan {
  atomic_int releases;
  pthread_t releaser;
};

static void give_back(void *payload) {
  struct loan *l = payload;
  l->releaser = pthread_self();
  atomic_fetch_add(&l->releases, 1);
}

struct work {
  ferrox_array *x;
  float sum;
};

/* On a worker: sum the lent array through a transposed view, then free
 * every handle, so the loan ends on this thread. */
static void *sum_and_free(void *arg) {
  struct work *w = arg;
  ferrox_array *t = NULL, *s = NULL;
  TRY(ferrox_transpose(&t, w->x, NULL, 0, NULL, &E));
  TRY(ferrox_sum(&s, t, NULL, 0, false, NULL, &E));
  TRY(ferrox_array_copy_to(s, &w->sum, sizeof w->sum, &E));
  CHECK(ferrox_array_free(t));
  CHECK(ferrox_array_free(s));
  CHECK(ferrox_array_free(w->x));
  return NULL;
}

int main(void) {
  watchdog(60);
  enum { ROWS = 64, COLS = 32, N = ROWS * COLS };
  float *buf = aligned_alloc(64, N * sizeof(float) + 64);
  EXPECT(buf != NULL);
  float want = 0;
  for (int i = 0; i < N; i++) {
    buf[i] = (float)(i % 7);
    want += buf[i];
  }
  int32_t shape[2] = {ROWS, COLS};

  /* In place, released by the thread that frees the last handle. */
  struct loan loan = {0};
  struct work w = {0};
  TRY(ferrox_array_new_data_managed(&w.x, buf, shape, 2, FERROX_FLOAT32, &loan, give_back, &E));
  const void *ptr = NULL;
  TRY(ferrox_array_data(&ptr, w.x, &E));
  EXPECT(ptr == (const void *)buf);
  EXPECT(atomic_load(&loan.releases) == 0);
  ferrox_array *keep = NULL;
  TRY(ferrox_array_clone(&keep, w.x, &E));
  pthread_t worker;
  EXPECT(pthread_create(&worker, NULL, sum_and_free, &w) == 0);
  EXPECT(pthread_join(worker, NULL) == 0);
  EXPECT(w.sum == want);
  EXPECT(atomic_load(&loan.releases) == 0); /* `keep` still reads it */
  float first = -1;
  TRY(ferrox_sum(&keep, keep, NULL, 0, false, NULL, &E)); /* replaces the handle */
  TRY(ferrox_array_item_float32(&first, keep, &E));
  EXPECT(first == want);
  CHECK(ferrox_array_free(keep));
  EXPECT(atomic_load(&loan.releases) == 1);
  EXPECT(pthread_equal(loan.releaser, pthread_self()));

  /* Released on a worker when the worker frees the last handle. */
  struct loan loan2 = {0};
  struct work w2 = {0};
  TRY(ferrox_array_new_data_managed(&w2.x, buf, shape, 2, FERROX_FLOAT32, &loan2, give_back, &E));
  EXPECT(pthread_create(&worker, NULL, sum_and_free, &w2) == 0);
  EXPECT(pthread_join(worker, NULL) == 0);
  EXPECT(w2.sum == want);
  EXPECT(atomic_load(&loan2.releases) == 1);
  EXPECT(pthread_equal(loan2.releaser, worker));

  /* Misaligned: copied, released before the call returns. */
  struct loan loan3 = {0};
  ferrox_array *m = NULL;
  int32_t three[1] = {3};
  const float *odd = (const float *)((const char *)buf + 4);
  TRY(ferrox_array_new_data_managed(&m, odd, three, 1, FERROX_FLOAT32, &loan3, give_back, &E));
  EXPECT(atomic_load(&loan3.releases) == 1);
  float back[3];
  TRY(ferrox_array_copy_to(m, back, sizeof back, &E));
  EXPECT(back[0] == odd[0] && back[1] == odd[1] && back[2] == odd[2]);
  CHECK(ferrox_array_free(m));

  /* Bool bytes are normalised, so copied. */
  struct loan loan4 = {0};
  unsigned char flags[8] __attribute__((aligned(8))) = {0, 9, 1, 0, 255, 0, 0, 2};
  int32_t eight[1] = {8};
  ferrox_array *b = NULL, *count = NULL;
  TRY(ferrox_array_new_data_managed(&b, flags, eight, 1, FERROX_BOOL, &loan4, give_back, &E));
  EXPECT(atomic_load(&loan4.releases) == 1);
  TRY(ferrox_sum(&count, b, NULL, 0, false, NULL, &E));
  int64_t n = 0;
  TRY(ferrox_array_item_int64(&n, count, &E));
  EXPECT(n == 4);
  CHECK(ferrox_array_free(b));
  CHECK(ferrox_array_free(count));

  /* A failing call releases too: a negative dimension, NULL data. */
  struct loan loan5 = {0};
  ferrox_array *bad = NULL;
  ferrox_error *err = NULL;
  int32_t negative[1] = {-2};
  EXPECT(ferrox_array_new_data_managed(&bad, buf, negative, 1, FERROX_FLOAT32, &loan5, give_back,
                                       &err) != FERROX_OK);
  EXPECT(bad == NULL && atomic_load(&loan5.releases) == 1);
  EXPECT(strstr(ferrox_error_message(err), "ferrox_array_new_data_managed") != NULL);
  ferrox_error_free(err);
  err = NULL;
  EXPECT(ferrox_array_new_data_managed(&bad, NULL, three, 1, FERROX_FLOAT32, &loan5, give_back,
                                       &err) == FERROX_ERROR_NULL_POINTER);
  EXPECT(atomic_load(&loan5.releases) == 2);
  ferrox_error_free(err);

  free(buf);
  return 0;
}
