/* The linear-algebra, FFT, convolution and quantization ops from C, each
 * checked against values worked out by hand, plus their argument errors. */
#include <math.h>

#include "common.h"

static float item(const ferrox_array *a) {
  float v = NAN;
  TRY(ferrox_array_item_float32(&v, a, &E));
  return v;
}

static int near(float a, float b) { return fabsf(a - b) < 1e-4f; }

int main(void) {
  watchdog(120);
  float m[4] = {4, 2, 2, 3}; /* symmetric positive definite */
  int32_t sq[2] = {2, 2};
  ferrox_array *a = NULL, *r = NULL, *x = NULL;
  TRY(ferrox_array_new_data(&a, m, sq, 2, FERROX_FLOAT32, &E));

  /* det = 8; inv(a) @ a = I; cholesky: L = [[2, 0], [1, sqrt 2]]. */
  TRY(ferrox_linalg_det(&r, a, NULL, &E));
  EXPECT(near(item(r), 8.0f));
  TRY(ferrox_linalg_inv(&r, a, NULL, &E));
  TRY(ferrox_matmul(&r, r, a, NULL, &E));
  float eye[4];
  TRY(ferrox_array_copy_to(r, eye, sizeof eye, &E));
  EXPECT(near(eye[0], 1) && near(eye[1], 0) && near(eye[2], 0) && near(eye[3], 1));
  TRY(ferrox_linalg_cholesky(&r, a, false, NULL, &E));
  float l[4];
  TRY(ferrox_array_copy_to(r, l, sizeof l, &E));
  EXPECT(near(l[0], 2) && near(l[1], 0) && near(l[2], 1) && near(l[3], sqrtf(2)));

  /* Factorisations come back as vectors: qr (2), svd (3), eigh (2). */
  ferrox_vector_array *parts = NULL;
  TRY(ferrox_linalg_qr(&parts, a, NULL, &E));
  EXPECT(ferrox_vector_array_size(parts) == 2);
  TRY(ferrox_linalg_svd(&parts, a, true, NULL, &E));
  EXPECT(ferrox_vector_array_size(parts) == 3);
  TRY(ferrox_linalg_eigh(&parts, a, false, NULL, &E));
  EXPECT(ferrox_vector_array_size(parts) == 2);
  TRY(ferrox_vector_array_get(&x, parts, 0, &E));
  float w[2]; /* eigenvalues (7 -+ sqrt 17) / 2, ascending */
  TRY(ferrox_array_copy_to(x, w, sizeof w, &E));
  EXPECT(near(w[0], (7 - sqrtf(17)) / 2) && near(w[1], (7 + sqrtf(17)) / 2));

  /* Norms: Frobenius by default, a number, and a bad order. */
  TRY(ferrox_linalg_norm(&r, a, NULL, NULL, 0, false, NULL, &E));
  EXPECT(near(item(r), sqrtf(33)));
  TRY(ferrox_linalg_norm(&r, a, "1", NULL, 0, false, NULL, &E));
  EXPECT(near(item(r), 6));
  ferrox_error *err = NULL;
  EXPECT(ferrox_linalg_norm(&r, a, "two", NULL, 0, false, NULL, &err) == FERROX_ERROR_INVALID_ARGUMENT);
  EXPECT(strstr(ferrox_error_message(err), "ord") != NULL);
  ferrox_error_free(err);
  err = NULL;

  /* fft of [1, 0, 0, 0] is all ones; rfft keeps n/2 + 1 bins; a bad axis
   * is an error. */
  float impulse[4] = {1, 0, 0, 0};
  int32_t four[1] = {4};
  TRY(ferrox_array_new_data(&x, impulse, four, 1, FERROX_FLOAT32, &E));
  TRY(ferrox_fft_rfft(&r, x, -1, -1, NULL, &E));
  EXPECT(ferrox_array_shape(r)[0] == 3 && ferrox_array_dtype(r) == FERROX_COMPLEX64);
  TRY(ferrox_fft_fftn(&r, x, NULL, 0, NULL, 0, NULL, &E));
  TRY(ferrox_abs(&r, r, NULL, &E));
  TRY(ferrox_sum(&r, r, NULL, 0, false, NULL, &E));
  EXPECT(near(item(r), 4));
  EXPECT(ferrox_fft_fft(&r, x, -1, 3, NULL, &err) != FERROX_OK);
  ferrox_error_free(err);
  err = NULL;

  /* conv1d: [1, 2, 3] with kernel [1, 1] -> [3, 5]; conv2d wants rank 4. */
  float sig[3] = {1, 2, 3}, ker[2] = {1, 1};
  int32_t sig_shape[3] = {1, 3, 1}, ker_shape[3] = {1, 2, 1}, one[1] = {1}, zero[1] = {0};
  ferrox_array *s = NULL, *k = NULL;
  TRY(ferrox_array_new_data(&s, sig, sig_shape, 3, FERROX_FLOAT32, &E));
  TRY(ferrox_array_new_data(&k, ker, ker_shape, 3, FERROX_FLOAT32, &E));
  TRY(ferrox_conv1d(&r, s, k, one, zero, one, 1, 1, NULL, &E));
  float y[2];
  TRY(ferrox_array_copy_to(r, y, sizeof y, &E));
  EXPECT(y[0] == 3 && y[1] == 5);
  EXPECT(ferrox_conv2d(&r, s, k, one, zero, one, 1, 1, NULL, &err) == FERROX_ERROR_SHAPE);
  ferrox_error_free(err);
  err = NULL;

  /* quantize -> dequantize round trip of a 4 x 64 ramp (affine, 4 bits). */
  int32_t wshape[2] = {4, 64};
  TRY(ferrox_arange(&x, 0, 256, 1, FERROX_FLOAT32, NULL, &E));
  TRY(ferrox_reshape(&x, x, wshape, 2, NULL, &E));
  ferrox_array *wq = NULL, *sc = NULL, *bi = NULL, *back = NULL;
  TRY(ferrox_quantize(&parts, x, 64, 4, NULL, NULL, &E));
  EXPECT(ferrox_vector_array_size(parts) == 3);
  TRY(ferrox_vector_array_get(&wq, parts, 0, &E));
  TRY(ferrox_vector_array_get(&sc, parts, 1, &E));
  TRY(ferrox_vector_array_get(&bi, parts, 2, &E));
  TRY(ferrox_dequantize(&back, wq, sc, bi, 64, 4, "affine", NULL, &E));
  TRY(ferrox_subtract(&r, back, x, NULL, &E));
  TRY(ferrox_abs(&r, r, NULL, &E));
  TRY(ferrox_max(&r, r, NULL, 0, false, NULL, &E));
  EXPECT(item(r) <= 3.0f); /* half a step of 63/15 per group */
  TRY(ferrox_quantized_matmul(&r, x, wq, sc, bi, true, -1, -1, NULL, NULL, &E));
  EXPECT(ferrox_array_shape(r)[0] == 4 && ferrox_array_shape(r)[1] == 4);
  EXPECT(ferrox_quantize(&parts, x, 64, 4, "nope", NULL, &err) != FERROX_OK);
  ferrox_error_free(err);

  ferrox_array_free(a); ferrox_array_free(r); ferrox_array_free(x);
  ferrox_array_free(s); ferrox_array_free(k); ferrox_array_free(wq);
  ferrox_array_free(sc); ferrox_array_free(bi); ferrox_array_free(back);
  ferrox_vector_array_free(parts);
  return 0;
}
