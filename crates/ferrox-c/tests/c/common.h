/* Helpers shared by the C tests of ferrox-c. Each test is one program:
 * exit 0 and print nothing on success; on failure print why and exit 1.
 * Every program arms a watchdog (alarm) so that a deadlock kills it. */
#ifndef FERROX_TEST_COMMON_H
#define FERROX_TEST_COMMON_H

#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ferrox.h"

/* A call that must succeed: on failure print the op's message and fail. */
#define CHECK(call)                                                            \
  do {                                                                         \
    ferrox_error *check_err_ = NULL;                                           \
    ferrox_status check_st_ = (call);                                          \
    (void)check_err_;                                                          \
    if (check_st_ != FERROX_OK) {                                              \
      fprintf(stderr, "%s:%d: %s failed with status %d\n", __FILE__, __LINE__, \
              #call, check_st_);                                               \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* Like CHECK, for calls that take an error slot named `E`. */
#define TRY(call)                                                              \
  do {                                                                         \
    ferrox_error *E = NULL;                                                    \
    ferrox_status try_st_ = (call);                                            \
    if (try_st_ != FERROX_OK) {                                                \
      fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__, __LINE__,       \
              #call, try_st_, ferrox_error_message(E));                        \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);      \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static inline void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "watchdog: the test did not finish in time\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  (void)ignored;
  _exit(124);
}

#include <signal.h>
static inline void watchdog(unsigned seconds) {
  signal(SIGALRM, on_alarm);
  alarm(seconds);
}

/* A float32 vector [0, 1, ..., n-1] * scale. */
static inline ferrox_array *vec_f32(int n, float scale) {
  float *buf = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (int i = 0; i < n; i++) buf[i] = (float)i * scale;
  int32_t shape[1] = {n};
  ferrox_array *a = NULL;
  TRY(ferrox_array_new_data(&a, buf, shape, 1, FERROX_FLOAT32, &E));
  free(buf);
  return a;
}

/* Copies a float32 array out (caller frees). */
static inline float *read_f32(const ferrox_array *a) {
  size_t n = ferrox_array_size(a);
  float *out = malloc(sizeof(float) * (n > 0 ? n : 1));
  TRY(ferrox_array_copy_to(a, out, n * sizeof(float), &E));
  return out;
}

/* A vector holding one array (the array handle stays the caller's). */
static inline ferrox_vector_array *vec1(const ferrox_array *a) {
  ferrox_vector_array *v = NULL;
  TRY(ferrox_vector_array_new(&v, &E));
  TRY(ferrox_vector_array_append(v, a, &E));
  return v;
}

/* The first array of a vector, as a new handle. */
static inline ferrox_array *first(const ferrox_vector_array *v) {
  ferrox_array *a = NULL;
  TRY(ferrox_vector_array_get(&a, v, 0, &E));
  return a;
}

#endif
