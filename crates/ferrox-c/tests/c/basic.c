/* One short pass over the API, with every handle freed: arrays from and to
 * C buffers (copying and lent), introspection, table ops, a closure with
 * compile, vjp, jvp, value_and_grad, vmap, random keys and safetensors.
 * The harness also runs this under valgrind memcheck. */
#include "common.h"

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

static ferrox_status elementwise_square(ferrox_vector_array **res, const ferrox_vector_array *args,
                                        void *p, ferrox_error **err) {
  (void)p;
  ferrox_array *x = NULL;
  ferrox_status st = ferrox_vector_array_get(&x, args, 0, err);
  if (!st) st = ferrox_square(&x, x, NULL, err);
  if (!st) st = ferrox_vector_array_new(res, err);
  if (!st) st = ferrox_vector_array_append(*res, x, err);
  ferrox_array_free(x);
  return st;
}

static int released;
static void release(void *p) { released += p == &released; }

int main(int argc, char **argv) {
  watchdog(120);
  /* Arrays from C buffers. */
  float data[6] = {1, 2, 3, 4, 5, 6};
  int32_t shape[2] = {2, 3};
  ferrox_array *a = NULL, *lent = NULL;
  TRY(ferrox_array_new_data(&a, data, shape, 2, FERROX_FLOAT32, &E));
  TRY(ferrox_array_new_data_managed(&lent, data, shape, 2, FERROX_FLOAT32, &released, release, &E));
  EXPECT(released <= 1); /* 1 if `data` was not 8-aligned (copied) */
  EXPECT(ferrox_array_ndim(a) == 2 && ferrox_array_shape(a)[1] == 3);
  EXPECT(ferrox_array_size(a) == 6 && ferrox_array_nbytes(a) == 24);
  EXPECT(ferrox_array_dtype(a) == FERROX_FLOAT32 && ferrox_array_itemsize(a) == 4);

  /* Ops: (a + lent) summed over axis 1, transposed view read in place. */
  ferrox_array *b = NULL, *t = NULL;
  int32_t axis1[1] = {1};
  TRY(ferrox_add(&b, a, lent, NULL, &E));
  TRY(ferrox_sum(&b, b, axis1, 1, false, NULL, &E));
  float sums[2];
  TRY(ferrox_array_copy_to(b, sums, sizeof sums, &E));
  EXPECT(sums[0] == 12.0f && sums[1] == 30.0f);
  TRY(ferrox_transpose(&t, a, NULL, 0, NULL, &E));
  const void *ptr = NULL;
  TRY(ferrox_array_data(&ptr, t, &E));
  EXPECT(((const float *)ptr)[1] == 4.0f); /* t = [[1,4],[2,5],[3,6]] */
  double item = 0;
  ferrox_array *m = NULL;
  TRY(ferrox_max(&m, a, NULL, 0, false, NULL, &E));
  TRY(ferrox_array_item_float64(&item, m, &E));
  EXPECT(item == 6.0);

  /* A closure, compiled, and its gradients. */
  ferrox_closure *f = NULL, *sq = NULL, *vf = NULL;
  ferrox_compiled *cf = NULL;
  TRY(ferrox_closure_new(&f, square_sum, NULL, NULL, &E));
  TRY(ferrox_closure_new(&sq, elementwise_square, NULL, NULL, &E));
  TRY(ferrox_compile(&cf, f, false, &E));
  ferrox_vector_array *args = vec1(a), *out = NULL, *grads = NULL, *tans = NULL;
  TRY(ferrox_compiled_call(&out, cf, args, NULL, &E));
  ferrox_array *y = first(out);
  TRY(ferrox_array_item_float64(&item, y, &E));
  EXPECT(item == 91.0);
  ferrox_closure_value_and_grad *vg = NULL;
  int32_t argnums[1] = {0};
  TRY(ferrox_value_and_grad(&vg, f, argnums, 1, &E));
  TRY(ferrox_closure_value_and_grad_apply(&out, &grads, vg, args, NULL, &E));
  ferrox_array *g = first(grads);
  float gv[6];
  TRY(ferrox_array_copy_to(g, gv, sizeof gv, &E));
  for (int i = 0; i < 6; i++) EXPECT(gv[i] == 2.0f * data[i]);
  TRY(ferrox_vjp(&out, &grads, sq, args, args, &E)); /* cotangent = a */
  ferrox_array_free(g);
  g = first(grads);
  TRY(ferrox_array_copy_to(g, gv, sizeof gv, &E));
  for (int i = 0; i < 6; i++) EXPECT(gv[i] == 2.0f * data[i] * data[i]);
  TRY(ferrox_jvp(&out, &tans, sq, args, args, &E));
  ferrox_array_free(g);
  g = first(tans);
  TRY(ferrox_array_copy_to(g, gv, sizeof gv, &E));
  for (int i = 0; i < 6; i++) EXPECT(gv[i] == 2.0f * data[i] * data[i]);
  int32_t in_axes[1] = {0}, out_axes[1] = {0};
  TRY(ferrox_vmap(&vf, f, in_axes, 1, out_axes, 1, &E)); /* row-wise sums of squares */
  TRY(ferrox_closure_apply(&out, vf, args, NULL, &E));
  ferrox_array_free(g);
  g = first(out);
  TRY(ferrox_array_copy_to(g, sums, sizeof sums, &E));
  EXPECT(sums[0] == 14.0f && sums[1] == 77.0f);

  /* Random keys. */
  ferrox_array *key = NULL, *keys = NULL, *u = NULL, *z = NULL, *lo = NULL, *hi = NULL;
  TRY(ferrox_random_key(&key, 1, &E));
  TRY(ferrox_random_split(&keys, key, 3, NULL, &E));
  EXPECT(ferrox_array_shape(keys)[0] == 3);
  TRY(ferrox_array_new_float32(&lo, 0.0f, &E));
  TRY(ferrox_array_new_float32(&hi, 1.0f, &E));
  TRY(ferrox_random_uniform(&u, lo, hi, shape, 2, FERROX_FLOAT32, key, NULL, &E));
  TRY(ferrox_random_normal(&z, shape, 2, FERROX_FLOAT32, 0.0f, 1.0f, key, NULL, &E));
  float uv[6];
  TRY(ferrox_array_copy_to(u, uv, sizeof uv, &E));
  for (int i = 0; i < 6; i++) EXPECT(uv[i] >= 0.0f && uv[i] < 1.0f);

  /* safetensors round trip, with metadata. */
  char path[64];
  snprintf(path, sizeof path, "%s", argc > 1 ? argv[1] : "/tmp/ferrox-c-basic.safetensors");
  ferrox_map_string_to_array *map = NULL, *back = NULL;
  ferrox_array *again = NULL;
  TRY(ferrox_map_string_to_array_new(&map, &E));
  TRY(ferrox_map_string_to_array_insert(map, "weight", a, &E));
  TRY(ferrox_map_string_to_array_insert(map, "noise", z, &E));
  ferrox_map_string_to_string *meta = NULL, *meta_back = NULL;
  TRY(ferrox_map_string_to_string_new(&meta, &E));
  TRY(ferrox_map_string_to_string_insert(meta, "format", "mlx", &E));
  TRY(ferrox_map_string_to_string_insert(meta, "step", "12", &E));
  TRY(ferrox_save_safetensors(path, map, meta, &E));
  TRY(ferrox_load_safetensors(&back, &meta_back, path, &E));
  EXPECT(ferrox_map_string_to_array_size(back) == 2);
  EXPECT(ferrox_map_string_to_string_size(meta_back) == 2);
  EXPECT(strcmp(ferrox_map_string_to_string_key(meta_back, 1), "step") == 0);
  const char *step = NULL;
  TRY(ferrox_map_string_to_string_get(&step, meta_back, "step", &E));
  EXPECT(strcmp(step, "12") == 0);
  ferrox_error *missing = NULL;
  EXPECT(ferrox_map_string_to_string_get(&step, meta_back, "epoch", &missing) == FERROX_ERROR_VALUE);
  EXPECT(strstr(ferrox_error_message(missing), "epoch") != NULL);
  ferrox_error_free(missing);
  ferrox_map_string_to_string_free(meta);
  ferrox_map_string_to_string_free(meta_back);
  EXPECT(strcmp(ferrox_map_string_to_array_key(back, 0), "noise") == 0);
  TRY(ferrox_map_string_to_array_get(&again, back, "weight", &E));
  float wv[6];
  TRY(ferrox_array_copy_to(again, wv, sizeof wv, &E));
  EXPECT(memcmp(wv, data, sizeof data) == 0);
  remove(path);

  ferrox_array *arrays[] = {a, lent, b, t, m, y, g, key, keys, u, z, lo, hi, again};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++) CHECK(ferrox_array_free(arrays[i]));
  EXPECT(released == 1); /* the loan ends with the last array reading it */
  ferrox_vector_array_free(args);
  ferrox_vector_array_free(out);
  ferrox_vector_array_free(grads);
  ferrox_vector_array_free(tans);
  ferrox_map_string_to_array_free(map);
  ferrox_map_string_to_array_free(back);
  ferrox_closure_value_and_grad_free(vg);
  ferrox_compiled_free(cf);
  ferrox_closure_free(f);
  ferrox_closure_free(sq);
  ferrox_closure_free(vf);
  CHECK(ferrox_synchronize_all(NULL));
  return 0;
}
