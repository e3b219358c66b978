"""quantize / dequantize / quantized_matmul / gather_qmm against numpy
references of MLX's affine packing."""

import numpy as np
import pytest

import ferrox.core as fx
from conftest import assert_close


def np_quantize(w, group_size, bits):
    """MLX's affine quantization in numpy (float32, round half to even)."""
    w = w.astype(np.float32)
    rows = w.reshape(-1, group_size)
    n_bins = np.float32((1 << bits) - 1)
    w_max, w_min = rows.max(1), rows.min(1)
    scale = np.maximum((w_max - w_min) / n_bins, np.float32(1e-7))
    bias = np.zeros_like(scale)
    if bits == 1:
        bias = w_min
    else:
        mask = np.abs(w_min) > np.abs(w_max)
        scale = np.where(mask, scale, -scale)
        edge = np.where(mask, w_min, w_max)
        q0 = np.rint(edge / scale)
        nz = q0 != 0
        scale = np.where(nz, edge / np.where(nz, q0, 1), scale).astype(np.float32)
        bias = np.where(nz, edge, 0).astype(np.float32)
    q = np.clip(np.rint((rows - bias[:, None]) / scale[:, None]), 0, n_bins).astype(np.uint64)
    # The bit stream: code i at bits [i * bits, (i + 1) * bits) of its row.
    k = w.shape[-1]
    q = q.reshape(-1, k)
    words = np.zeros((q.shape[0], k * bits // 32), dtype=np.uint64)
    for i in range(k):
        p = i * bits
        words[:, p // 32] |= (q[:, i] << np.uint64(p % 32)) & np.uint64(0xFFFFFFFF)
        if p % 32 + bits > 32:
            words[:, p // 32 + 1] |= q[:, i] >> np.uint64(32 - p % 32)
    shape = w.shape[:-1]
    return (
        words.astype(np.uint32).reshape(*shape, -1),
        scale.reshape(*shape, -1),
        bias.reshape(*shape, -1),
    )


def np_dequantize(wq, scales, biases, group_size, bits):
    words = wq.reshape(-1, wq.shape[-1]).astype(np.uint64)
    k = wq.shape[-1] * 32 // bits
    q = np.zeros((words.shape[0], k), dtype=np.uint64)
    for i in range(k):
        p = i * bits
        v = words[:, p // 32] >> np.uint64(p % 32)
        if p % 32 + bits > 32:
            v |= words[:, p // 32 + 1] << np.uint64(32 - p % 32)
        q[:, i] = v & np.uint64((1 << bits) - 1)
    q = q.astype(np.float32).reshape(-1, group_size)
    s = scales.reshape(-1, 1).astype(np.float32)
    b = biases.reshape(-1, 1).astype(np.float32)
    return (q * s + b).reshape(*wq.shape[:-1], k)


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_quantize_matches_numpy_reference(rng, bits, group_size):
    w = rng.standard_normal((4, 256)).astype(np.float32)
    wq, s, b = fx.quantize(fx.array(w), group_size=group_size, bits=bits)
    rq, rs, rb = np_quantize(w, group_size, bits)
    assert wq.dtype == fx.uint32 and wq.shape == rq.shape
    np.testing.assert_array_equal(np.array(wq), rq)
    np.testing.assert_array_equal(np.array(s), rs)
    np.testing.assert_array_equal(np.array(b), rb)
    back = fx.dequantize(wq, s, b, group_size, bits)
    np.testing.assert_array_equal(np.array(back), np_dequantize(rq, rs, rb, group_size, bits))


def test_defaults_and_modes(rng):
    w = fx.array(rng.standard_normal((8, 128)).astype(np.float32))
    wq, s, b = fx.quantize(w)
    assert (wq.shape, s.shape, b.shape) == ((8, 16), (8, 2), (8, 2))
    for mode, gs, bits in [("mxfp4", 32, 4), ("mxfp8", 32, 8), ("nvfp4", 16, 4)]:
        out = fx.quantize(w, mode=mode)
        assert len(out) == 2
        wq, s = out
        assert wq.shape == (8, 128 * bits // 32) and s.shape == (8, 128 // gs)
        assert s.dtype == fx.uint8
        back = fx.dequantize(wq, s, mode=mode)
        assert back.dtype == fx.bfloat16
        assert_close(back.astype(fx.float32), w, rtol=0.3, atol=0.3)
    with pytest.raises(ValueError):
        fx.quantize(w, group_size=48)
    with pytest.raises(ValueError):
        fx.quantize(w, bits=7)
    with pytest.raises(ValueError):
        fx.quantize(w, mode="mxfp4", group_size=64)
    with pytest.raises(ValueError):
        fx.quantize(fx.ones((64,)))
    with pytest.raises(ValueError):
        fx.dequantize(*fx.quantize(w), dtype=fx.int32)


@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("m", [1, 3, 33])
def test_quantized_matmul_matches_numpy(rng, transpose, m):
    k, n = (128, 48) if transpose else (48, 128)
    w = rng.standard_normal((n, k) if transpose else (k, n)).astype(np.float32)
    wq, s, b = fx.quantize(fx.array(w), 64, 4)
    wd = np_dequantize(np.array(wq), np.array(s), np.array(b), 64, 4)
    x = rng.standard_normal((2, m, k)).astype(np.float32)
    y = fx.quantized_matmul(fx.array(x), wq, s, b, transpose=transpose, group_size=64, bits=4)
    ref = x @ (wd.T if transpose else wd)
    assert y.shape == ref.shape
    assert_close(y, ref, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError):
        fx.quantized_matmul(fx.ones((2, k + 1)), wq, s, b, transpose=transpose)


def test_half_precision_and_gradient(rng):
    w = rng.standard_normal((16, 64)).astype(np.float32)
    wq, s, b = fx.quantize(fx.array(w).astype(fx.bfloat16), 32, 8)
    assert s.dtype == fx.bfloat16
    x = fx.array(rng.standard_normal((2, 64)).astype(np.float32)).astype(fx.bfloat16)
    y = fx.quantized_matmul(x, wq, s, b, group_size=32, bits=8)
    assert y.dtype == fx.bfloat16
    wq, s, b = fx.quantize(fx.array(w), 32, 4)
    wd = np_dequantize(np.array(wq), np.array(s), np.array(b), 32, 4)
    x = fx.array(rng.standard_normal((3, 64)).astype(np.float32))
    g = fx.grad(lambda x: fx.quantized_matmul(x, wq, s, b, group_size=32, bits=4).sum())(x)
    assert_close(g, np.broadcast_to(wd.sum(0), (3, 64)), rtol=1e-4, atol=1e-4)


def test_gather_qmm_matches_gathered_numpy(rng):
    w = rng.standard_normal((4, 8, 64)).astype(np.float32)
    wq, s, b = fx.quantize(fx.array(w), 64, 4)
    wd = np_dequantize(np.array(wq), np.array(s), np.array(b), 64, 4)
    x = rng.standard_normal((3, 2, 64)).astype(np.float32)
    li, ri = np.array([0, 2, 1, 1]), np.array([3, 0, 1, 3])
    y = fx.gather_qmm(fx.array(x), wq, s, b, lhs_indices=fx.array(li), rhs_indices=fx.array(ri))
    ref = np.stack([x[i] @ wd[j].T for i, j in zip(li, ri)])
    assert_close(y, ref, rtol=1e-4, atol=1e-4)
    assert fx.gather_qmm.__doc__.startswith("gather_qmm(x: array, w: array, /, scales")


def _round_trip(x, mode, g=None):
    """``x`` through quantize and dequantize (float32), MLX's reference of qqmm."""
    return fx.dequantize(*fx.quantize(x, mode=mode, global_scale=g), mode=mode,
                         global_scale=g, dtype=fx.float32)


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8", "mxfp4"])
@pytest.mark.parametrize("m", [1, 3])
def test_qqmm_matches_round_trips(rng, mode, m):
    x = fx.array(rng.standard_normal((m, 128)).astype(np.float32))
    w = fx.array(rng.standard_normal((40, 128)).astype(np.float32))
    wq, s = fx.quantize(w, mode=mode)
    want = np.array(_round_trip(x, mode)) @ np.array(_round_trip(w, mode)).T
    assert_close(np.array(fx.qqmm(x, wq, s, mode=mode)), want, atol=1e-3)
    # A float w is quantized on the fly.
    assert_close(np.array(fx.qqmm(x, w, mode=mode)), want, atol=1e-3)


def test_qqmm_global_scales_and_errors(rng):
    x = fx.array(rng.standard_normal((1, 64)).astype(np.float32))
    w = fx.array(rng.standard_normal((8, 64)).astype(np.float32))
    gx, gw = fx.max(fx.abs(x)), fx.max(fx.abs(w))
    wq, s = fx.quantize(w, mode="nvfp4", global_scale=gw)
    y = fx.qqmm(x, wq, s, global_scale_x=gx, global_scale_w=gw)
    want = np.array(_round_trip(x, "nvfp4", gx)) @ np.array(_round_trip(w, "nvfp4", gw)).T
    assert_close(np.array(y), want, atol=1e-3)
    with pytest.raises(ValueError, match="global_scale"):
        fx.qqmm(x, wq, s, global_scale_x=gx)
    with pytest.raises(ValueError, match="affine"):
        fx.qqmm(x, wq, s, mode="affine")
    with pytest.raises(ValueError, match="scales"):
        fx.qqmm(x, wq)


def test_gather_qqmm_matches_gather_mm(rng):
    x = fx.array(rng.standard_normal((3, 2, 64)).astype(np.float32))
    w = fx.array(rng.standard_normal((4, 6, 64)).astype(np.float32))
    wq, s = fx.quantize(w, mode="mxfp8")
    li, ri = fx.array([0, 2]), fx.array([3, 1])
    y = fx.gather_qqmm(x, wq, s, li, ri, mode="mxfp8")
    want = fx.gather_mm(_round_trip(x, "mxfp8"), fx.swapaxes(_round_trip(w, "mxfp8"), -1, -2),
                        li, ri)
    assert y.shape == (2, 2, 6)
    assert_close(np.array(y), np.array(want), atol=1e-3)
