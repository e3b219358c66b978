/* Exit with live async work and live streams: `exit main` returns from
 * main, `exit worker` calls exit(0) on a worker thread while main waits.
 * Nothing is freed or synchronised first. The harness runs each mode many
 * times and expects exit status 0 and no output at all. */
#include "common.h"

static void released_at_exit(void *payload) {
  (void)payload;
  static const char msg[] = "exit: a lent buffer was released during exit\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  (void)ignored;
}

static void start_work(void) {
  ferrox_stream *s = NULL;
  TRY(ferrox_stream_new(&s, NULL, &E));
  int32_t shape[2] = {48, 48};
  ferrox_array *a = NULL, *b = NULL;
  TRY(ferrox_ones(&a, shape, 2, FERROX_FLOAT32, s, &E));
  for (int i = 0; i < 6; i++) {
    TRY(ferrox_matmul(&b, a, a, s, &E));
    TRY(ferrox_tanh(&a, b, s, &E));
  }
  /* A lent buffer still read at exit: its release must never run then
   * (it would print, and the harness expects no output). */
  static float lent_buf[48 * 48] __attribute__((aligned(64)));
  ferrox_array *lent = NULL;
  TRY(ferrox_array_new_data_managed(&lent, lent_buf, shape, 2, FERROX_FLOAT32, NULL, released_at_exit, &E));
  TRY(ferrox_add(&a, a, lent, s, &E));
  ferrox_vector_array *v = vec1(a);
  TRY(ferrox_async_eval(v, &E)); /* pending when the process exits */
  /* a, b, lent, v and s stay alive (leaked on purpose). */
}

static void *worker(void *arg) {
  (void)arg;
  start_work();
  exit(0);
}

int main(int argc, char **argv) {
  watchdog(20);
  if (argc > 1 && strcmp(argv[1], "worker") == 0) {
    pthread_t t;
    start_work(); /* main's own pending work too */
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL); /* never returns: the worker exits the process */
    return 3;
  }
  start_work();
  return 0;
}
