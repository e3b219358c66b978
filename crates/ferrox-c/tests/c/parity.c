/* The rest of mlx-c's op list from C: indexing and updates, joins and
 * views, products, convolutions, windows, FFT helpers, the fused kernels,
 * random draws, memory counters, the npy/gguf files and the collectives of
 * a process alone. Each result is
 * checked against values worked out by hand (random draws by their
 * ranges, moments and reproducibility). */
#include <math.h>

#include "common.h"

/* Every handle made here, freed at the end. */
static ferrox_array *owned[512];
static int n_owned;
static ferrox_array **slot(void) {
  EXPECT(n_owned < 512);
  return &owned[n_owned++];
}

static ferrox_array *f32(const float *v, const int32_t *shape, size_t ndim) {
  ferrox_array **r = slot();
  TRY(ferrox_array_new_data(r, v, shape, ndim, FERROX_FLOAT32, &E));
  return *r;
}
static ferrox_array *vec(const float *v, int32_t n) { return f32(v, &n, 1); }
static ferrox_array *ivec(const int32_t *v, int32_t n) {
  ferrox_array **r = slot();
  TRY(ferrox_array_new_data(r, v, &n, 1, FERROX_INT32, &E));
  return *r;
}

/* `a` as float32 values (at most `n`); returns its size. */
static size_t values_of(const ferrox_array *a, float *out, size_t n) {
  ferrox_array *c = NULL;
  TRY(ferrox_astype(&c, a, FERROX_FLOAT32, NULL, &E));
  size_t size = ferrox_array_size(c);
  EXPECT(size <= n);
  TRY(ferrox_array_copy_to(c, out, size * sizeof(float), &E));
  ferrox_array_free(c);
  return size;
}

static void expect_values(int line, const ferrox_array *a, const float *want, size_t n, float tol) {
  float got[256];
  size_t size = values_of(a, got, 256);
  if (size != n) {
    fprintf(stderr, "line %d: %zu values, expected %zu\n", line, size, n);
    exit(1);
  }
  for (size_t i = 0; i < n; i++) {
    if (!(fabsf(got[i] - want[i]) <= tol)) {
      fprintf(stderr, "line %d: value %zu is %g, expected %g\n", line, i, got[i], want[i]);
      exit(1);
    }
  }
}
#define EXPECT_VALUES(a, tol, ...)                                             \
  do {                                                                         \
    const float want_[] = {__VA_ARGS__};                                       \
    expect_values(__LINE__, (a), want_, sizeof want_ / sizeof *want_, (tol));  \
  } while (0)

static void expect_shape(int line, const ferrox_array *a, const int32_t *want, size_t ndim) {
  const size_t *shape = ferrox_array_shape(a);
  int ok = ferrox_array_ndim(a) == ndim;
  for (size_t i = 0; ok && i < ndim; i++) ok = shape[i] == (size_t)want[i];
  if (!ok) {
    fprintf(stderr, "line %d: unexpected shape\n", line);
    exit(1);
  }
}
#define EXPECT_SHAPE(a, ...)                                                   \
  do {                                                                         \
    const int32_t want_[] = {__VA_ARGS__};                                     \
    expect_shape(__LINE__, (a), want_, sizeof want_ / sizeof *want_);          \
  } while (0)

static ferrox_vector_array *vec_of(ferrox_array *const *items, size_t n) {
  ferrox_vector_array *v = NULL;
  TRY(ferrox_vector_array_new_data(&v, (const ferrox_array *const *)items, n, &E));
  return v;
}
static ferrox_array *at(const ferrox_vector_array *v, size_t i) {
  ferrox_array **r = slot();
  TRY(ferrox_vector_array_get(r, v, i, &E));
  return *r;
}

static const ferrox_optional_double none = {0, false};

static void views_and_joins(void) {
  float six[6] = {0, 1, 2, 3, 4, 5};
  int32_t s23[2] = {2, 3}, s33[2] = {3, 3};
  ferrox_array *a = f32(six, s23, 2), *r = NULL;

  TRY(ferrox_transpose(slot(), a, NULL, 0, NULL, &E));
  TRY(ferrox_contiguous(&r, owned[n_owned - 1], NULL, &E));
  EXPECT_VALUES(r, 0, 0, 3, 1, 4, 2, 5);

  float nine[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  TRY(ferrox_diagonal(&r, f32(nine, s33, 2), 0, 0, 1, NULL, &E));
  EXPECT_VALUES(r, 0, 0, 4, 8);
  TRY(ferrox_trace(&r, f32(nine, s33, 2), 1, 0, 1, FERROX_FLOAT32, NULL, &E));
  EXPECT_VALUES(r, 0, 6); /* 1 + 5 */

  int32_t two_three[2] = {2, 3};
  TRY(ferrox_unflatten(&r, vec(six, 6), 0, two_three, 2, NULL, &E));
  EXPECT_SHAPE(r, 2, 3);

  int32_t shape[2] = {2, 2};
  int64_t strides[2] = {1, 1};
  TRY(ferrox_as_strided(&r, vec(six, 6), shape, 2, strides, 2, 0, NULL, &E));
  EXPECT_VALUES(r, 0, 0, 1, 1, 2);

  int32_t one[1] = {1};
  TRY(ferrox_roll(&r, vec(six, 4), one, 1, NULL, 0, NULL, &E));
  EXPECT_VALUES(r, 0, 3, 0, 1, 2);

  int32_t lo[1] = {1}, hi[1] = {2};
  TRY(ferrox_pad(&r, vec(six + 1, 2), NULL, lo, hi, 1, NULL, 9.0, NULL, &E));
  EXPECT_VALUES(r, 0, 9, 1, 2, 9, 9);
  TRY(ferrox_pad(&r, vec(six + 1, 2), NULL, lo, hi, 1, "edge", 0.0, NULL, &E));
  EXPECT_VALUES(r, 0, 1, 1, 2, 2, 2);
  ferrox_error *err = NULL;
  EXPECT(ferrox_pad(&r, vec(six, 2), NULL, lo, hi, 1, "wrap", 0.0, NULL, &err) == FERROX_ERROR_INVALID_ARGUMENT);
  EXPECT(strstr(ferrox_error_message(err), "wrap") != NULL);
  ferrox_error_free(err);

  ferrox_vector_array *parts = NULL;
  int32_t cut[1] = {2};
  TRY(ferrox_split_sections(&parts, vec(six, 5), cut, 1, 0, NULL, &E));
  EXPECT(ferrox_vector_array_size(parts) == 2);
  EXPECT_VALUES(at(parts, 0), 0, 0, 1);
  EXPECT_VALUES(at(parts, 1), 0, 2, 3, 4);
  ferrox_vector_array_free(parts);

  int32_t s13[2] = {1, 3}, s21[2] = {2, 1};
  ferrox_array *pair[2] = {f32(six, s13, 2), f32(six, s21, 2)};
  ferrox_vector_array *in = vec_of(pair, 2), *out = NULL;
  TRY(ferrox_broadcast_arrays(&out, in, NULL, &E));
  EXPECT_SHAPE(at(out, 0), 2, 3);
  EXPECT_VALUES(at(out, 1), 0, 0, 0, 0, 1, 1, 1);
  ferrox_vector_array *deps = vec_of(pair, 1);
  TRY(ferrox_depends(&out, in, deps, NULL, &E));
  EXPECT(ferrox_vector_array_size(out) == 2);
  EXPECT_VALUES(at(out, 0), 0, 0, 1, 2);
  ferrox_array *axes_pair[2] = {vec(six + 1, 2), vec(six + 3, 3)};
  ferrox_vector_array *grid_in = vec_of(axes_pair, 2);
  TRY(ferrox_meshgrid(&out, grid_in, false, NULL, NULL, &E));
  EXPECT_SHAPE(at(out, 0), 3, 2);
  EXPECT_VALUES(at(out, 1), 0, 3, 3, 4, 4, 5, 5);
  ferrox_vector_array_free(in);
  ferrox_vector_array_free(deps);
  ferrox_vector_array_free(grid_in);
  ferrox_vector_array_free(out);
  ferrox_array_free(r);
}

static void indexing(void) {
  float six[6] = {0, 1, 2, 3, 4, 5};
  float zeros[4] = {0};
  int32_t s23[2] = {2, 3}, s31[2] = {3, 1}, s22[2] = {2, 2}, s21[2] = {2, 1};
  ferrox_array *r = NULL;

  /* gather row 1 of [[0,1,2],[3,4,5]]: shape [1, 1, 3]. */
  int32_t row[1] = {1}, axis0[1] = {0}, sizes[2] = {1, 3};
  ferrox_array *idx[1] = {ivec(row, 1)};
  ferrox_vector_array *indices = vec_of(idx, 1);
  TRY(ferrox_gather(&r, f32(six, s23, 2), indices, axis0, 1, sizes, 2, NULL, &E));
  EXPECT_SHAPE(r, 1, 1, 3);
  EXPECT_VALUES(r, 0, 3, 4, 5);
  ferrox_vector_array_free(indices);

  /* scatter into zeros[3] at [0, 0, 2]. */
  int32_t where[3] = {0, 0, 2};
  float ups[3] = {1, 2, -3};
  ferrox_array *sidx[1] = {ivec(where, 3)};
  indices = vec_of(sidx, 1);
  ferrox_array *z3 = vec(zeros, 3), *u = f32(ups, s31, 2);
  TRY(ferrox_scatter_add(&r, z3, indices, u, axis0, 1, NULL, &E));
  EXPECT_VALUES(r, 0, 3, 0, -3);
  TRY(ferrox_scatter_max(&r, z3, indices, u, axis0, 1, NULL, &E));
  EXPECT_VALUES(r, 0, 2, 0, 0);
  TRY(ferrox_scatter_min(&r, z3, indices, u, axis0, 1, NULL, &E));
  EXPECT_VALUES(r, 0, 0, 0, -3);
  float ones3[3] = {1, 1, 1};
  TRY(ferrox_scatter_prod(&r, vec(ones3, 3), indices, u, axis0, 1, NULL, &E));
  EXPECT_VALUES(r, 0, 2, 1, -3);
  ferrox_vector_array_free(indices);
  int32_t one[1] = {1};
  ferrox_array *oidx[1] = {ivec(one, 1)};
  indices = vec_of(oidx, 1);
  int32_t s11[2] = {1, 1};
  TRY(ferrox_scatter(&r, z3, indices, f32(ups + 2, s11, 2), axis0, 1, NULL, &E));
  EXPECT_VALUES(r, 0, 0, -3, 0);
  ferrox_vector_array_free(indices);

  int32_t start[1] = {1}, stop[1] = {3};
  TRY(ferrox_slice_update(&r, vec(zeros, 4), vec(ones3, 2), start, 1, stop, 1, NULL, 0, NULL, &E));
  EXPECT_VALUES(r, 0, 0, 1, 1, 0);

  /* The same slice and update at a position held in an array. */
  float six4[4] = {0, 1, 2, 3};
  int32_t at1[1] = {1}, two[1] = {2};
  ferrox_array *pos = ivec(at1, 1);
  TRY(ferrox_slice_dynamic(&r, vec(six4, 4), pos, axis0, 1, two, 1, NULL, &E));
  EXPECT_VALUES(r, 0, 1, 2);
  TRY(ferrox_slice_update_dynamic(&r, vec(zeros, 4), vec(ones3, 2), pos, axis0, 1, NULL, &E));
  EXPECT_VALUES(r, 0, 0, 1, 1, 0);

  int32_t cols[2] = {1, 0};
  int32_t s2[2] = {2, 1};
  ferrox_array *ci = NULL;
  TRY(ferrox_array_new_data(&ci, cols, s2, 2, FERROX_INT32, &E));
  float vals[2] = {5, 6};
  TRY(ferrox_put_along_axis(&r, f32(zeros, s22, 2), ci, f32(vals, s21, 2), 1, NULL, &E));
  EXPECT_VALUES(r, 0, 0, 5, 6, 0);
  ferrox_array_free(ci);

  bool mask[4] = {false, true, false, true};
  int32_t four[1] = {4};
  ferrox_array *m = NULL;
  TRY(ferrox_array_new_data(&m, mask, four, 1, FERROX_BOOL, &E));
  TRY(ferrox_masked_scatter(&r, vec(zeros, 4), m, vec(vals, 2), NULL, &E));
  EXPECT_VALUES(r, 0, 0, 5, 0, 6);
  ferrox_array_free(m);
  ferrox_array_free(r);
}

static void arithmetic_and_products(void) {
  float num[2] = {7, -7}, den[2] = {2, 2};
  ferrox_array *r = NULL;
  ferrox_vector_array *qr = NULL;
  TRY(ferrox_divmod(&qr, vec(num, 2), vec(den, 2), NULL, &E));
  EXPECT_VALUES(at(qr, 0), 0, 3, -4);
  EXPECT_VALUES(at(qr, 1), 0, 1, 1);
  ferrox_vector_array_free(qr);

  TRY(ferrox_array_equal(&r, vec(num, 2), vec(num, 2), false, NULL, &E));
  EXPECT_VALUES(r, 0, 1);
  float odd[4] = {NAN, INFINITY, -INFINITY, 1};
  ferrox_optional_double pos = {5, true}, neg = {-5, true};
  TRY(ferrox_nan_to_num(&r, vec(odd, 4), 0.0, pos, neg, NULL, &E));
  EXPECT_VALUES(r, 0, 0, 5, -5, 1);
  TRY(ferrox_hadamard_transform(&r, vec(den, 2), none, NULL, &E));
  EXPECT_VALUES(r, 1e-5f, 2.8284271f, 0); /* [2, 2] @ H2 / sqrt 2 */
  TRY(ferrox_full_like(&r, vec(num, 2), 3.5, NULL, &E));
  EXPECT_VALUES(r, 0, 3.5f, 3.5f);
  float exact[2] = {1.0f, -0.5f};
  TRY(ferrox_to_fp8(&r, vec(exact, 2), NULL, &E));
  EXPECT(ferrox_array_dtype(r) == FERROX_UINT8);
  TRY(ferrox_from_fp8(&r, r, FERROX_FLOAT32, NULL, &E));
  EXPECT_VALUES(r, 0, 1.0f, -0.5f);

  float m[4] = {1, 2, 3, 4}, ones[4] = {1, 1, 1, 1};
  int32_t s22[2] = {2, 2};
  ferrox_array *a = f32(m, s22, 2);
  ferrox_array *ops[2] = {a, vec(ones, 2)};
  ferrox_vector_array *operands = vec_of(ops, 2);
  TRY(ferrox_einsum(&r, "ij,j->i", operands, NULL, &E));
  EXPECT_VALUES(r, 0, 3, 7);
  ferrox_vector_array_free(operands);
  TRY(ferrox_tensordot_axis(&r, a, a, 1, NULL, &E));
  EXPECT_VALUES(r, 0, 7, 10, 15, 22);
  int32_t zero[1] = {0};
  TRY(ferrox_tensordot(&r, a, a, zero, 1, zero, 1, NULL, &E)); /* a^T a */
  EXPECT_VALUES(r, 0, 10, 14, 14, 20);

  /* gather_mm: a [1, 2] times the second of two [2, 1] matrices. */
  float bs[4] = {1, 1, 2, 3};
  int32_t s12[2] = {1, 2}, s221[3] = {2, 2, 1};
  int32_t second[1] = {1};
  TRY(ferrox_gather_mm(&r, f32(m, s12, 2), f32(bs, s221, 3), NULL, ivec(second, 1), NULL, &E));
  EXPECT_VALUES(r, 0, 8); /* 1*2 + 2*3 */

  /* segmented_mm: [1 2 3 4] @ ones over segments [0, 2) and [2, 4). */
  int32_t s14[2] = {1, 4}, s41[2] = {4, 1}, segs[4] = {0, 2, 2, 4};
  ferrox_array *seg = NULL;
  TRY(ferrox_array_new_data(&seg, segs, s22, 2, FERROX_INT32, &E));
  TRY(ferrox_segmented_mm(&r, f32(m, s14, 2), f32(ones, s41, 2), seg, NULL, &E));
  EXPECT_VALUES(r, 0, 3, 7);
  ferrox_array_free(seg);

  /* block_masked_mm without masks is a matmul. */
  float big[32 * 32];
  for (int i = 0; i < 32 * 32; i++) big[i] = 1;
  int32_t s32[2] = {32, 32};
  TRY(ferrox_block_masked_mm(&r, f32(big, s32, 2), f32(big, s32, 2), 32, NULL, NULL, NULL, NULL, &E));
  float got[256];
  EXPECT(ferrox_array_size(r) == 1024);
  ferrox_array *corner = NULL;
  int32_t c0[2] = {0, 0}, c1[2] = {2, 2}, st[2] = {1, 1};
  TRY(ferrox_slice(&corner, r, c0, 2, c1, 2, st, 2, NULL, &E));
  values_of(corner, got, 256);
  EXPECT(got[0] == 32 && got[3] == 32);
  ferrox_array_free(corner);

  /* gather_qmm against dequantize then matmul. */
  float wv[2 * 8 * 64], xv[64];
  for (int i = 0; i < 2 * 8 * 64; i++) wv[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
  for (int i = 0; i < 64; i++) xv[i] = (float)(i % 5) / 5.0f;
  int32_t s2864[3] = {2, 8, 64}, s164[2] = {1, 64};
  ferrox_vector_array *q = NULL;
  TRY(ferrox_quantize(&q, f32(wv, s2864, 3), 64, 4, NULL, NULL, &E));
  ferrox_array *wq = at(q, 0), *scales = at(q, 1), *biases = at(q, 2);
  TRY(ferrox_gather_qmm(&r, f32(xv, s164, 2), wq, scales, biases, NULL, ivec(second, 1), true, 64, 4,
                        NULL, false, NULL, &E));
  float out[8];
  EXPECT(values_of(r, out, 8) == 8);
  ferrox_array *wd = NULL;
  TRY(ferrox_dequantize(&wd, wq, scales, biases, 64, 4, NULL, NULL, &E));
  static float wdv[2 * 8 * 64];
  EXPECT(ferrox_array_size(wd) == 2 * 8 * 64);
  TRY(ferrox_array_copy_to(wd, wdv, sizeof wdv, &E));
  for (int j = 0; j < 8; j++) {
    float want = 0;
    for (int k = 0; k < 64; k++) want += xv[k] * wdv[(8 + j) * 64 + k];
    EXPECT(fabsf(out[j] - want) < 1e-3f);
  }
  ferrox_array_free(wd);
  ferrox_vector_array_free(q);

  /* conv_general: [1 2 3 4] * [1 1] -> [3 5 7]; transposed: [1 2] -> [1 3 2]. */
  int32_t s141[3] = {1, 4, 1}, s121[3] = {1, 2, 1};
  int32_t one1[1] = {1}, zero1[1] = {0};
  TRY(ferrox_conv_general(&r, f32(m, s141, 3), f32(ones, s121, 3), one1, zero1, zero1, one1, one1, 1,
                          1, false, NULL, &E));
  EXPECT_VALUES(r, 0, 3, 5, 7);
  TRY(ferrox_conv_transpose1d(&r, f32(m, s121, 3), f32(ones, s121, 3), one1, zero1, one1, zero1, 1,
                              1, NULL, &E));
  EXPECT_VALUES(r, 0, 1, 3, 2);
  ferrox_error *err = NULL;
  EXPECT(ferrox_conv_transpose2d(&r, f32(m, s121, 3), f32(ones, s121, 3), NULL, NULL, NULL, NULL, 0,
                                 1, NULL, &err) == FERROX_ERROR_SHAPE);
  ferrox_error_free(err);
  ferrox_array_free(r);
}

static void creation_windows_fft(void) {
  ferrox_array *r = NULL;
  TRY(ferrox_eye(&r, 2, -1, 0, FERROX_FLOAT32, NULL, &E));
  EXPECT_VALUES(r, 0, 1, 0, 0, 1);
  TRY(ferrox_tri(&r, 2, 3, 0, FERROX_FLOAT32, NULL, &E));
  EXPECT_VALUES(r, 0, 1, 0, 0, 1, 1, 0);
  TRY(ferrox_identity(&r, 2, FERROX_INT32, NULL, &E));
  EXPECT(ferrox_array_dtype(r) == FERROX_INT32);
  EXPECT_VALUES(r, 0, 1, 0, 0, 1);
  TRY(ferrox_hanning(&r, 3, NULL, &E));
  EXPECT_VALUES(r, 1e-6f, 0, 1, 0);
  TRY(ferrox_bartlett(&r, 3, NULL, &E));
  EXPECT_VALUES(r, 1e-6f, 0, 1, 0);
  TRY(ferrox_hamming(&r, 3, NULL, &E));
  EXPECT_VALUES(r, 1e-6f, 0.08f, 1, 0.08f);
  TRY(ferrox_blackman(&r, 3, NULL, &E));
  EXPECT_VALUES(r, 1e-6f, 0, 1, 0);
  TRY(ferrox_fft_fftfreq(&r, 4, 1.0, NULL, &E));
  EXPECT_VALUES(r, 1e-6f, 0, 0.25f, -0.5f, -0.25f);
  TRY(ferrox_fft_rfftfreq(&r, 4, 0.5, NULL, &E));
  EXPECT_VALUES(r, 1e-6f, 0, 0.5f, 1.0f);
  float four[4] = {0, 1, 2, 3};
  TRY(ferrox_fft_fftshift(&r, vec(four, 4), NULL, 0, NULL, &E));
  EXPECT_VALUES(r, 0, 2, 3, 0, 1);
  TRY(ferrox_fft_ifftshift(&r, r, NULL, 0, NULL, &E));
  EXPECT_VALUES(r, 0, 0, 1, 2, 3);
  ferrox_array_free(r);
}

static void fast_kernels(void) {
  ferrox_array *r = NULL;
  float x[2] = {3, 4};
  int32_t s1112[4] = {1, 1, 1, 2};
  TRY(ferrox_fast_rms_norm(&r, vec(x, 2), NULL, 0.0f, NULL, &E));
  EXPECT_VALUES(r, 1e-5f, 0.8485281f, 1.1313708f);
  float w[2] = {2, 1};
  TRY(ferrox_fast_layer_norm(&r, vec(x, 2), vec(w, 2), NULL, 0.0f, NULL, &E));
  EXPECT_VALUES(r, 1e-4f, -2, 1);

  /* One position at offset 1, two dims, base 10000: rotated by 1 radian. */
  float ones[4] = {1, 1, 1, 1};
  ferrox_optional_double base = {10000, true};
  float c = cosf(1), s = sinf(1);
  TRY(ferrox_fast_rope(&r, f32(ones, s1112, 4), 2, false, base, 1.0f, 1, NULL, NULL, &E));
  EXPECT_VALUES(r, 1e-5f, c - s, s + c);
  int32_t offset[1] = {1};
  ferrox_array *off = NULL;
  TRY(ferrox_array_new_data(&off, offset, NULL, 0, FERROX_INT32, &E));
  TRY(ferrox_fast_rope_dynamic(&r, f32(ones, s1112, 4), 2, false, base, 1.0f, off, NULL, NULL, &E));
  EXPECT_VALUES(r, 1e-5f, c - s, s + c);
  ferrox_array_free(off);

  int32_t s1122[4] = {1, 1, 2, 2};
  ferrox_array *q = f32(ones, s1122, 4);
  TRY(ferrox_fast_scaled_dot_product_attention(&r, q, q, q, 1.0f, "causal", NULL, NULL, NULL, &E));
  EXPECT_VALUES(r, 1e-6f, 1, 1, 1, 1);
  ferrox_error *err = NULL;
  EXPECT(ferrox_fast_scaled_dot_product_attention(&r, q, q, q, 1.0f, "sliding", NULL, NULL, NULL,
                                                  &err) == FERROX_ERROR_INVALID_ARGUMENT);
  ferrox_error_free(err);
  ferrox_array_free(r);
}

static void random_draws(void) {
  ferrox_array *key = NULL, *r = NULL;
  TRY(ferrox_random_key(&key, 42, &E));
  float v[256];
  int32_t n100[1] = {100}, n200[1] = {200};

  TRY(ferrox_random_bits(&r, n100, 1, 4, key, NULL, &E));
  EXPECT(ferrox_array_dtype(r) == FERROX_UINT32 && ferrox_array_size(r) == 100);
  ferrox_array *lo = NULL, *hi = NULL;
  TRY(ferrox_array_new_int32(&lo, 3, &E));
  TRY(ferrox_array_new_int32(&hi, 7, &E));
  TRY(ferrox_random_randint(&r, lo, hi, n100, 1, FERROX_INT32, key, NULL, &E));
  values_of(r, v, 256);
  for (int i = 0; i < 100; i++) EXPECT(v[i] >= 3 && v[i] < 7 && v[i] == floorf(v[i]));

  ferrox_array *p = NULL;
  TRY(ferrox_array_new_float32(&p, 0.25f, &E));
  TRY(ferrox_random_bernoulli(&r, p, n200, 1, key, NULL, &E));
  EXPECT(ferrox_array_dtype(r) == FERROX_BOOL);
  float mean = 0;
  values_of(r, v, 256);
  for (int i = 0; i < 200; i++) mean += v[i] / 200;
  EXPECT(mean > 0.12f && mean < 0.38f);

  float logits[3] = {0, -INFINITY, -INFINITY};
  TRY(ferrox_random_categorical(&r, vec(logits, 3), -1, NULL, 0, 10, key, NULL, &E));
  EXPECT(values_of(r, v, 256) == 10);
  for (int i = 0; i < 10; i++) EXPECT(v[i] == 0);

  TRY(ferrox_random_gumbel(&r, n100, 1, FERROX_FLOAT32, key, NULL, &E));
  values_of(r, v, 256);
  for (int i = 0; i < 100; i++) EXPECT(isfinite(v[i]));
  TRY(ferrox_random_laplace(&r, n200, 1, FERROX_FLOAT32, 10.0f, 0.5f, key, NULL, &E));
  mean = 0;
  values_of(r, v, 256);
  for (int i = 0; i < 200; i++) mean += v[i] / 200;
  EXPECT(fabsf(mean - 10) < 0.3f);

  ferrox_array *lower = NULL, *upper = NULL;
  TRY(ferrox_array_new_float32(&lower, -0.5f, &E));
  TRY(ferrox_array_new_float32(&upper, 0.5f, &E));
  TRY(ferrox_random_truncated_normal(&r, lower, upper, n200, 1, FERROX_FLOAT32, key, NULL, &E));
  values_of(r, v, 256);
  for (int i = 0; i < 200; i++) EXPECT(v[i] >= -0.5f && v[i] <= 0.5f);

  float mu[2] = {1, -2}, cov[4] = {1, 0, 0, 1};
  int32_t s22[2] = {2, 2}, n100x[1] = {100};
  TRY(ferrox_random_multivariate_normal(&r, vec(mu, 2), f32(cov, s22, 2), n100x, 1, FERROX_FLOAT32,
                                        key, NULL, &E));
  EXPECT_SHAPE(r, 100, 2);
  float m0 = 0, m1 = 0;
  values_of(r, v, 256);
  for (int i = 0; i < 100; i++) {
    m0 += v[2 * i] / 100;
    m1 += v[2 * i + 1] / 100;
  }
  EXPECT(fabsf(m0 - 1) < 0.4f && fabsf(m1 + 2) < 0.4f);

  TRY(ferrox_random_permutation_arange(&r, 10, key, NULL, &E));
  values_of(r, v, 256);
  int seen[10] = {0};
  for (int i = 0; i < 10; i++) seen[(int)v[i]]++;
  for (int i = 0; i < 10; i++) EXPECT(seen[i] == 1);
  float five[5] = {10, 20, 30, 40, 50};
  TRY(ferrox_random_permutation(&r, vec(five, 5), 0, key, NULL, &E));
  float sum = 0;
  values_of(r, v, 256);
  for (int i = 0; i < 5; i++) sum += v[i];
  EXPECT(sum == 150);

  /* The default key, after a seed, gives the same draws twice. */
  float first[4], second[4];
  int32_t n4[1] = {4};
  TRY(ferrox_random_seed(7, &E));
  TRY(ferrox_random_gumbel(&r, n4, 1, FERROX_FLOAT32, NULL, NULL, &E));
  values_of(r, first, 4);
  TRY(ferrox_random_seed(7, &E));
  TRY(ferrox_random_gumbel(&r, n4, 1, FERROX_FLOAT32, NULL, NULL, &E));
  values_of(r, second, 4);
  EXPECT(memcmp(first, second, sizeof first) == 0);

  ferrox_array *rest[] = {key, r, lo, hi, p, lower, upper};
  for (size_t i = 0; i < sizeof rest / sizeof *rest; i++) ferrox_array_free(rest[i]);
}

static void memory_and_files(const char *dir) {
  size_t active = 0, peak = 0, cache = 0, limit = 0, old = 0;
  TRY(ferrox_get_active_memory(&active, &E));
  TRY(ferrox_get_peak_memory(&peak, &E));
  EXPECT(peak >= active);
  TRY(ferrox_get_memory_limit(&limit, &E));
  EXPECT(limit > 0);
  TRY(ferrox_set_cache_limit(&old, 1 << 20, &E));
  TRY(ferrox_set_cache_limit(NULL, old, &E));
  TRY(ferrox_clear_cache(&E));
  TRY(ferrox_get_cache_memory(&cache, &E));
  EXPECT(cache == 0);
  TRY(ferrox_reset_peak_memory(&E));
  ferrox_error *err = NULL;
  EXPECT(ferrox_get_active_memory(NULL, &err) == FERROX_ERROR_NULL_POINTER);
  ferrox_error_free(err);

  char path[512];
  float v[3] = {1.5f, -2, 4};
  ferrox_array *a = vec(v, 3), *back = NULL;
  snprintf(path, sizeof path, "%s/parity.npy", dir);
  TRY(ferrox_save(path, a, &E));
  TRY(ferrox_load(&back, path, &E));
  EXPECT_VALUES(back, 0, 1.5f, -2, 4);
  remove(path);

  ferrox_map_string_to_array *map = NULL, *loaded = NULL;
  TRY(ferrox_map_string_to_array_new(&map, &E));
  TRY(ferrox_map_string_to_array_insert(map, "w", a, &E));
  snprintf(path, sizeof path, "%s/parity.gguf", dir);
  TRY(ferrox_save_gguf(path, map, &E));
  TRY(ferrox_load_gguf(&loaded, path, &E));
  TRY(ferrox_map_string_to_array_get(&back, loaded, "w", &E));
  EXPECT_VALUES(back, 0, 1.5f, -2, 4);
  remove(path);
  snprintf(path, sizeof path, "%s/missing.npy", dir);
  err = NULL;
  EXPECT(ferrox_load(&back, path, &err) == FERROX_ERROR_NOT_FOUND);
  ferrox_error_free(err);
  ferrox_array_free(back);
  ferrox_map_string_to_array_free(map);
  ferrox_map_string_to_array_free(loaded);
}

/* A process launched alone is a group of one: collectives are identities. */
static void distributed_alone(void) {
  ferrox_distributed_group *g = NULL, *half = NULL;
  TRY(ferrox_distributed_init(&g, false, NULL, &E));
  EXPECT(ferrox_distributed_group_size(g) == 1 && ferrox_distributed_group_rank(g) == 0);
  EXPECT(ferrox_distributed_is_available("any") && !ferrox_distributed_is_available("nccl"));
  TRY(ferrox_distributed_group_split(&half, g, 0, -1, &E));
  EXPECT(ferrox_distributed_group_size(half) == 1);
  float v[3] = {1, -2, 3};
  ferrox_array *r = NULL;
  TRY(ferrox_distributed_all_sum(&r, vec(v, 3), g, NULL, &E));
  EXPECT_VALUES(r, 0, 1, -2, 3);
  TRY(ferrox_distributed_all_max(&r, vec(v, 3), NULL, NULL, &E));
  EXPECT_VALUES(r, 0, 1, -2, 3);
  TRY(ferrox_distributed_all_gather(&r, vec(v, 3), half, NULL, &E));
  EXPECT_VALUES(r, 0, 1, -2, 3);
  TRY(ferrox_distributed_sum_scatter(&r, vec(v, 3), g, NULL, &E));
  EXPECT_VALUES(r, 0, 1, -2, 3);
  ferrox_error *err = NULL;
  ferrox_distributed_group *none = NULL;
  EXPECT(ferrox_distributed_init(&none, true, "ring", &err) != FERROX_OK && none == NULL);
  EXPECT(strstr(ferrox_error_message(err), "ring") != NULL);
  ferrox_error_free(err);
  ferrox_array_free(r);
  ferrox_distributed_group_free(half);
  ferrox_distributed_group_free(g);
}

int main(int argc, char **argv) {
  watchdog(120);
  views_and_joins();
  indexing();
  arithmetic_and_products();
  creation_windows_fft();
  fast_kernels();
  random_draws();
  memory_and_files(argc > 1 ? argv[1] : "/tmp");
  distributed_alone();
  for (int i = 0; i < n_owned; i++) ferrox_array_free(owned[i]);
  return 0;
}
