"""The mlx.core names ferrox added for parity, checked against numpy."""

import threading

import numpy as np
import pytest

import ferrox.core as fx

RNG = np.random.default_rng(0)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.array(a), b, rtol=tol, atol=tol)


# ------------------------------------------------------------ elementwise


def test_unary_additions_match_numpy():
    x = np.array([-2.5, -0.5, 0.0, 0.5, 2.5, np.inf, -np.inf, np.nan], np.float32)
    a = fx.array(x)
    close(fx.trunc(a), np.trunc(x))
    assert fx.isposinf(a).tolist() == np.isposinf(x).tolist()
    assert fx.isneginf(a).tolist() == np.isneginf(x).tolist()
    assert fx.isposinf(fx.array([1, 2])).tolist() == [False, False]
    close(fx.degrees(fx.array([np.pi, 1.0])), np.degrees([np.pi, 1.0]))
    close(fx.radians(fx.array([180, 90])), np.radians([180.0, 90.0]))
    assert fx.radians(fx.array([180])).dtype == fx.float32
    assert fx.positive(fx.array([1, -2])).tolist() == [1, -2]
    b = fx.array([1, 0, 0]), fx.array([1.0, 1.0, 0.0])
    assert fx.logical_xor(*b).tolist() == [False, True, False]
    with pytest.raises(TypeError):
        fx.trunc(fx.array([1 + 1j]))


def test_scans_and_reductions_match_numpy():
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    a = fx.array(x)
    close(fx.logcumsumexp(a, axis=1), np.logaddexp.accumulate(x, axis=1))
    close(a.logcumsumexp(axis=0, reverse=True),
          np.flip(np.logaddexp.accumulate(np.flip(x, 0), axis=0), 0))
    close(fx.cumulative_sum(fx.array([1, 2, 3]), dtype=fx.float32), [1.0, 3.0, 6.0])
    assert fx.cumsum(fx.array([1, 2]), dtype=fx.float16).dtype == fx.float16
    close(fx.median(a, axis=1), np.median(x, axis=1))
    close(fx.median(a), np.median(x))
    close(fx.median(a, axis=(0, 1), keepdims=True), np.median(x, axis=(0, 1), keepdims=True))
    lo, hi = fx.minmax(a, axis=0)
    close(lo, x.min(0)), close(hi, x.max(0))
    z = np.array([[0, 1, 2], [0, 0, 3]])
    assert fx.count_nonzero(fx.array(z)).item() == 3
    assert fx.count_nonzero(fx.array(z), axis=1).tolist() == [2, 1]
    m = np.arange(24).reshape(2, 3, 4)
    assert fx.trace(fx.array(m)).tolist() == np.trace(m).tolist()
    assert fx.trace(fx.array(m), 1, 1, 2).tolist() == np.trace(m, 1, 1, 2).tolist()
    with pytest.raises(ValueError):
        fx.median(fx.zeros((0,)))


def test_shape_helpers_match_numpy():
    x = np.arange(24).reshape(2, 3, 4)
    a = fx.array(x)
    assert fx.flip(a).tolist() == np.flip(x).tolist()
    assert fx.flip(a, axis=(0, 2)).tolist() == np.flip(x, (0, 2)).tolist()
    assert fx.atleast_1d(fx.array(1.0)).shape == (1,)
    two = fx.atleast_2d(fx.array([1, 2]), fx.array(3))
    assert [t.shape for t in two] == [(1, 2), (1, 1)]
    assert fx.atleast_3d(fx.array([[1, 2]])).shape == np.atleast_3d(np.array([[1, 2]])).shape
    assert fx.matrix_transpose(a).shape == (2, 4, 3)
    assert a.mT.shape == (2, 4, 3)
    parts = fx.unstack(a, axis=1)
    assert isinstance(parts, tuple) and len(parts) == 3
    assert parts[1].tolist() == x[:, 1].tolist()
    assert fx.broadcast_shapes((1, 3), (2, 1), (3,)) == (2, 3)
    with pytest.raises(ValueError):
        fx.broadcast_shapes((2,), (3,))
    d = np.array([1, 4, 9, 16, 25])
    assert fx.diff(fx.array(d)).tolist() == np.diff(d).tolist()
    assert fx.diff(fx.array(d), n=3).tolist() == np.diff(d, n=3).tolist()
    assert fx.diff(fx.array(x), axis=1).tolist() == np.diff(x, axis=1).tolist()
    w = fx.as_strided(fx.arange(6), (4, 3), (1, 1))
    assert w.tolist() == np.lib.stride_tricks.sliding_window_view(np.arange(6), 3).tolist()
    with pytest.raises(ValueError):
        fx.as_strided(fx.arange(6), (4, 3), (2, 1))
    v1, v2 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    close(fx.vecdot(fx.array(v1), fx.array(v2)), np.sum(v1 * v2, axis=-1))
    with pytest.raises(ValueError):
        fx.vecdot(fx.array(1.0), fx.array([1.0]))
    assert fx.hadamard_transform(fx.array(5.0)).item() == 5.0
    with pytest.raises(ValueError):
        fx.kron(fx.array([]), fx.array([1, 2]))
    with pytest.raises(ValueError):
        fx.take(fx.zeros((4, 0)), fx.array([[1]]), axis=1)
    assert a.view(fx.uint8).shape == (2, 3, 32)


def test_searchsorted_and_unique_match_numpy():
    s = np.sort(RNG.integers(0, 10, 20))
    v = RNG.integers(-2, 12, (3, 4))
    for side in ("left", "right"):
        got = fx.searchsorted(fx.array(s), fx.array(v), side=side)
        assert got.dtype == fx.uint32
        assert got.tolist() == np.searchsorted(s, v, side=side).tolist()
    with pytest.raises(ValueError):
        fx.searchsorted(fx.array(s), fx.array(v), side="middle")
    x = RNG.integers(0, 6, (4, 5))
    vals, idx, inv, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    n = len(vals)
    u = fx.unique(fx.array(x), n, return_index=True, return_inverse=True, return_counts=True)
    assert u[0].tolist() == vals.tolist()
    assert u[1].tolist() == idx.tolist()
    assert u[2].tolist() == inv.reshape(x.shape).tolist()
    assert u[3].tolist() == counts.tolist()
    padded = fx.unique(fx.array(x), n + 2, fill_value=-1)
    assert padded.tolist() == vals.tolist() + [-1, -1]
    with pytest.raises(ValueError):
        fx.unique(fx.zeros((0,)), 2)


def test_windows_and_spectral_helpers_match_numpy():
    for name in ("bartlett", "blackman", "hamming", "hanning"):
        for m in (0, 1, 5, 16):
            close(getattr(fx, name)(m), getattr(np, name)(m), 1e-6)
    for n in (1, 4, 5):
        close(fx.fft.fftfreq(n, 0.5), np.fft.fftfreq(n, 0.5))
        close(fx.fft.rfftfreq(n), np.fft.rfftfreq(n))
    x = np.arange(15).reshape(3, 5)
    assert fx.fft.fftshift(fx.array(x)).tolist() == np.fft.fftshift(x).tolist()
    assert fx.fft.ifftshift(fx.array(x), axes=1).tolist() == np.fft.ifftshift(x, axes=1).tolist()


def test_dynamic_slice_and_update():
    a = fx.arange(12).reshape(3, 4)
    s = fx.slice(a, fx.array([1, 2]), (0, 1), (2, 2))
    assert s.tolist() == [[6, 7], [10, 11]]
    u = fx.slice_update(a, fx.array([[0, 0]]), fx.array([2, 1]), (0, 1))
    assert u.tolist()[2] == [8, 0, 0, 11]
    f = fx.compile(lambda x, i: fx.slice(x, i, (0,), (2,)))
    assert f(fx.arange(6), fx.array([1])).tolist() == [1, 2]
    assert f(fx.arange(6), fx.array([3])).tolist() == [3, 4]


def test_laplace_moments():
    x = np.array(fx.random.laplace((20000,), loc=1.0, scale=2.0, key=fx.random.key(0)))
    assert abs(x.mean() - 1.0) < 0.1
    assert abs(x.var() - 8.0) < 0.6


# ------------------------------------------------------------ convolutions


def conv_ref(x, w, stride, pad_lo, pad_hi, kdil, idil, flip):
    """Naive N-d channels-last convolution in numpy (groups=1)."""
    d = x.ndim - 2
    if flip:
        w = np.flip(w, axis=tuple(range(1, d + 1)))
    for k in range(d):
        if idil[k] > 1:
            shape = list(x.shape)
            shape[k + 1] = (x.shape[k + 1] - 1) * idil[k] + 1
            y = np.zeros(shape, x.dtype)
            sl = [slice(None)] * x.ndim
            sl[k + 1] = slice(None, None, idil[k])
            y[tuple(sl)] = x
            x = y
    x = np.pad(x, [(0, 0)] + [(pad_lo[k], pad_hi[k]) for k in range(d)] + [(0, 0)])
    ksz = w.shape[1:-1]
    out_sz = [(x.shape[k + 1] - kdil[k] * (ksz[k] - 1) - 1) // stride[k] + 1 for k in range(d)]
    out = np.zeros((x.shape[0], *out_sz, w.shape[0]), np.float64)
    for idx in np.ndindex(*out_sz):
        acc = 0
        for kidx in np.ndindex(*ksz):
            pos = tuple(idx[k] * stride[k] + kidx[k] * kdil[k] for k in range(d))
            acc = acc + x[(slice(None), *pos, slice(None))] @ w[(slice(None), *kidx, slice(None))].T
        out[(slice(None), *idx, slice(None))] = acc
    return out


def test_conv_general_and_transposes_match_a_loop():
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3)).astype(np.float32)
    got = fx.conv_general(fx.array(x), fx.array(w), stride=2, padding=([2], [1]),
                          kernel_dilation=1, input_dilation=2, flip=True)
    close(got, conv_ref(x, w, [2], [2], [1], [1], [2], True), 1e-4)
    # conv_transpose1d is the gradient of conv1d with respect to its input.
    for stride, pad, dil in [(1, 0, 1), (2, 1, 1), (3, 0, 2)]:
        y = RNG.standard_normal((1, 4, 4)).astype(np.float32)
        wt = RNG.standard_normal((2, 3, 4)).astype(np.float32)
        t = fx.conv_transpose1d(fx.array(y), fx.array(wt), stride=stride, padding=pad, dilation=dil)
        span = dil * (wt.shape[1] - 1)
        ref = conv_ref(y, wt, [1], [span - pad], [span - pad], [dil], [stride], True)
        close(t, ref, 1e-4)
    x3 = RNG.standard_normal((1, 4, 4, 4, 2)).astype(np.float32)
    w3 = RNG.standard_normal((3, 2, 2, 2, 2)).astype(np.float32)
    close(fx.conv3d(fx.array(x3), fx.array(w3), padding=1),
          conv_ref(x3, w3, [1] * 3, [1] * 3, [1] * 3, [1] * 3, [1] * 3, False), 1e-4)
    assert fx.conv_transpose2d(fx.ones((1, 3, 3, 2)), fx.ones((4, 3, 3, 2)), stride=2).shape == (1, 7, 7, 4)
    a, v = RNG.standard_normal(7), RNG.standard_normal(3)
    for mode in ("full", "same", "valid"):
        close(fx.convolve(fx.array(a), fx.array(v), mode), np.convolve(a, v, mode), 1e-5)
        close(fx.convolve(fx.array(v), fx.array(a), mode), np.convolve(v, a, mode), 1e-5)


def test_gathered_masked_and_segmented_matmuls_match_numpy():
    a = RNG.standard_normal((3, 2, 4)).astype(np.float32)
    b = RNG.standard_normal((5, 4, 6)).astype(np.float32)
    li, ri = np.array([2, 0, 2]), np.array([4, 1, 0])
    got = fx.gather_mm(fx.array(a), fx.array(b), fx.array(li), fx.array(ri))
    close(got, a[li] @ b[ri], 1e-4)
    m = RNG.standard_normal((4, 4)).astype(np.float32)
    keep = np.array([[True, False], [False, True]])
    full_mask = np.kron(keep, np.ones((2, 2)))
    got = fx.block_masked_mm(fx.array(m), fx.array(m), 2, mask_lhs=fx.array(keep))
    close(got, (m * full_mask) @ m, 1e-4)
    got = fx.block_masked_mm(fx.array(m), fx.array(m), 2, mask_out=fx.array(keep))
    close(got, (m @ m) * full_mask, 1e-4)
    a2 = RNG.standard_normal((3, 6)).astype(np.float32)
    b2 = RNG.standard_normal((6, 2)).astype(np.float32)
    seg = np.array([[0, 2], [2, 6], [1, 1]])
    got = fx.segmented_mm(fx.array(a2), fx.array(b2), fx.array(seg))
    close(got, np.stack([a2[:, s:e] @ b2[s:e] for s, e in seg]), 1e-4)


def test_einsum_path_matches_numpy_greedy():
    cases = [("ij,jk,kl", [(5, 8), (8, 10), (10, 7)]), ("ij,jk,kl", [(5, 8), (8, 3), (3, 7)]),
             ("ea,fb,abcd,gc,hd->efgh", [(3, 4), (3, 5), (4, 5, 6, 7), (3, 6), (3, 7)])]
    for spec, shapes in cases:
        ops = [np.zeros(s) for s in shapes]
        want = np.einsum_path(spec, *ops, optimize="greedy")[0][1:]
        got, info = fx.einsum_path(spec, *[fx.zeros(s) for s in shapes])
        assert got == want, (spec, got, want)
        assert isinstance(info, str)
        xs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
        close(fx.einsum(spec, *[fx.array(x) for x in xs]), np.einsum(spec, *xs), 1e-3)
    assert fx.einsum_path("ii", fx.zeros((3, 3)))[0] == [(0,)]


# ------------------------------------------------------------ dtypes, devices


def test_dtype_introspection_matches_numpy():
    for d, n in [(fx.float16, np.float16), (fx.float32, np.float32), (fx.float64, np.float64)]:
        f, g = fx.finfo(d), np.finfo(n)
        assert (f.max, f.min, f.eps) == (float(g.max), float(g.min), float(g.eps))
    assert fx.finfo(fx.complex64).dtype == fx.float32
    assert fx.finfo(fx.bfloat16).eps == 2.0 ** -7
    for d, n in [(fx.int8, np.int8), (fx.uint64, np.uint64), (fx.int64, np.int64)]:
        assert (fx.iinfo(d).min, fx.iinfo(d).max) == (int(np.iinfo(n).min), int(np.iinfo(n).max))
    with pytest.raises(ValueError):
        fx.finfo(fx.int32)
    with pytest.raises(ValueError):
        fx.iinfo(fx.float32)
    assert fx.issubdtype(fx.float16, fx.floating)
    assert fx.issubdtype(fx.floating, fx.inexact)
    assert not fx.issubdtype(fx.bool_, fx.number)
    assert fx.issubdtype(fx.uint8, fx.integer) and not fx.issubdtype(fx.uint8, fx.signedinteger)
    assert fx.isdtype(fx.int8, "integral") and fx.isdtype(fx.float32, ("bool", fx.float32))
    assert fx.result_type(fx.uint8, fx.int8) == fx.int16
    assert fx.result_type(fx.array([1]), fx.float16) == fx.float16
    assert fx.can_cast(fx.int32, fx.float32) and not fx.can_cast(fx.array([1]), fx.int8)
    assert repr(fx.floating) == "DtypeCategory.floating"


def test_devices_and_streams_as_on_a_cpu_only_mlx():
    assert fx.device_count(fx.cpu) == 1 and fx.device_count(fx.gpu) == 0
    info = fx.device_info()
    assert info["architecture"] and info["device_name"]
    s = fx.new_thread_local_stream(fx.cpu)
    errors = []

    def use():
        try:
            with fx.stream(s):
                assert (fx.arange(4) * 2).tolist() == [0, 2, 4, 6]
            fx.clear_streams()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors and not any(t.is_alive() for t in threads)
    old = fx.default_stream(fx.cpu)
    fx.set_default_stream(s)
    try:
        assert fx.default_stream(fx.cpu) == s
    finally:
        fx.set_default_stream(old)
    assert fx.get_memory_limit() > 0
    a = fx.zeros((256,))
    fx.eval(a)
    assert fx.get_array_buffer_size(a, [a.reshape(16, 16)]) == 1024


# ------------------------------------------------------------ bad input


def test_integer_overflow_is_an_error_not_a_wrap():
    with pytest.raises(OverflowError):
        fx.array([300], dtype=fx.uint8)
    with pytest.raises(OverflowError):
        fx.array([-1], dtype=fx.uint32)
    with pytest.raises(OverflowError):
        fx.array(300, dtype=fx.int8)
    with pytest.raises(OverflowError):
        fx.full((2,), 1 << 40, dtype=fx.int32)
    with pytest.raises(ValueError):
        fx.left_shift(fx.array(1, dtype=fx.int32), 2**40)
    with pytest.raises(ValueError):
        fx.array([1], dtype=fx.int8) + 300
    assert (fx.array([1], dtype=fx.int8) + 100).tolist() == [101]
    assert fx.array([255], dtype=fx.uint8).tolist() == [255]


def test_grad_rejects_duplicate_argnums_and_non_scalar_functions():
    with pytest.raises(ValueError):
        fx.grad(lambda x: x.sum(), argnums=(0, 0))
    with pytest.raises(ValueError):
        fx.grad(lambda x: (x.sum(), x))(fx.array(1.0))
    v, g = fx.value_and_grad(lambda x: ((x * x).sum(), x))(fx.array(3.0))
    assert g.item() == 6.0


def test_bad_arguments_raise_python_errors():
    for f in [lambda: fx.diff(fx.array(1)), lambda: fx.unstack(fx.array(1)),
              lambda: fx.trace(fx.array([1])), lambda: fx.matrix_transpose(fx.array([1])),
              lambda: fx.searchsorted(fx.zeros((2, 2)), fx.zeros(2)),
              lambda: fx.unique(fx.array([1]), -1), lambda: fx.hanning(-1),
              lambda: fx.slice(fx.arange(4), fx.array([0]), (0,), (9,)),
              lambda: fx.conv_transpose1d(fx.ones((1, 3)), fx.ones((1, 2, 1))),
              lambda: fx.convolve(fx.ones((2, 2)), fx.ones(2)),
              lambda: fx.segmented_mm(fx.ones((2, 2)), fx.ones((2, 2)), fx.array([1, 2, 3])),
              lambda: fx.fft.fftfreq(4, 0.0), lambda: fx.isdtype(fx.int8, "nope"),
              lambda: fx.flip(fx.zeros((2,)), axis=3)]:
        with pytest.raises((ValueError, TypeError, IndexError)):
            f()


def test_print_precision_is_set_and_restored():
    fx.set_printoptions()
    x = fx.array([1.123456789])
    assert str(x) == "array([1.12346], dtype=float32)"
    with fx.printoptions(precision=4):
        assert str(x) == "array([1.1235], dtype=float32)"
        assert fx.get_printoptions().precision == 4
    assert fx.get_printoptions().precision == -1
    fx.set_printoptions(precision=2)
    try:
        assert str(fx.sin(x)) == "array([0.90], dtype=float32)"
    finally:
        fx.set_printoptions()
    with pytest.raises(ValueError):
        fx.set_printoptions(precision=-3)


def test_fp8_round_trip_and_rounding():
    x = fx.array([0.0, -0.0, 1.0, 448.0, 460.0, 1000.0, float("inf"), -float("inf"),
                  1.0625, 1.1875, 2.0**-9, 2.0**-10, 2.0**-10 * 1.01, -3.3])
    assert fx.to_fp8(x).tolist() == [0, 128, 56, 126, 126, 126, 126, 254, 56, 58, 1, 0, 1, 197]
    assert fx.to_fp8(fx.array([float("nan")])).tolist() == [127]
    codes = fx.array([0, 1, 8, 0x7E, 0x7F, 0x80, 0xFE, 0xFF, 56], dtype=fx.uint8)
    v = np.array(fx.from_fp8(codes, fx.float32))
    np.testing.assert_array_equal(v[[0, 1, 2, 3, 5, 6, 8]], [0, 2.0**-9, 2.0**-6, 448, -0.0, -448, 1])
    assert np.isnan(v[[4, 7]]).all()
    every = fx.arange(256).astype(fx.uint8)
    finite = np.isfinite(np.array(fx.from_fp8(every, fx.float32)))
    back = np.array(fx.to_fp8(fx.from_fp8(every, fx.float32)))
    assert (back[finite] == np.arange(256)[finite]).all()
    assert fx.from_fp8(codes).dtype == fx.bfloat16


def test_hadamard_transform_matches_the_sylvester_matrix():
    def hadamard(n):
        h = np.array([[1.0]])
        while h.shape[0] < n:
            h = np.block([[h, h], [h, -h]])
        return h

    x = RNG.standard_normal((3, 16)).astype(np.float32)
    close(fx.hadamard_transform(fx.array(x)), x @ hadamard(16).T / 4.0, 1e-4)
    close(fx.hadamard_transform(fx.array(x), scale=1.0), x @ hadamard(16).T, 1e-4)
    g = fx.grad(lambda a: (fx.hadamard_transform(a) * fx.arange(16)).sum())(fx.array(x[0]))
    close(g, hadamard(16) @ np.arange(16) / 4.0, 1e-4)


def test_fft_norms_match_numpy():
    r = RNG.standard_normal((8, 6)).astype(np.float32)
    c = (r + 1j * RNG.standard_normal((8, 6))).astype(np.complex64)
    cr = np.fft.rfft(r, axis=1)
    cr2 = np.fft.rfft2(r, axes=(0, 1))
    for norm in ("backward", "ortho", "forward"):
        for f, x, kw in [("fft", c, {"axis": 1}), ("ifft", c, {"axis": 1}), ("rfft", r, {"axis": 1}),
                         ("irfft", cr, {"axis": 1}), ("fft2", c, {"axes": (0, 1)}),
                         ("ifftn", c, {"axes": (0, 1)}), ("rfftn", r, {"axes": (0, 1)}),
                         ("irfft2", cr2, {"axes": (0, 1)}), ("rfft", r, {"axis": 1, "n": 9})]:
            got = getattr(fx.fft, f)(fx.array(x), norm=norm, **kw)
            close(got, getattr(np.fft, f)(x, norm=norm, **kw), 1e-4)
    with pytest.raises(ValueError):
        fx.fft.fft(fx.array(c), norm="sideways")


def test_stft_matches_framed_rfft_and_istft_inverts_it():
    x = RNG.standard_normal(100).astype(np.float32)
    n_fft, hop = 16, 4
    w = np.hanning(n_fft).astype(np.float32)
    got = fx.fft.stft(fx.array(x), n_fft=n_fft, hop_length=hop, window=fx.array(w))
    padded = np.pad(x, n_fft // 2, mode="reflect")
    frames = np.stack([padded[i:i + n_fft] for i in range(0, len(padded) - n_fft + 1, hop)])
    want = np.fft.rfft(frames * w, axis=-1).T
    close(got, want, 1e-4)
    back = fx.fft.istft(got, n_fft=n_fft, hop_length=hop, window=fx.array(w), length=100)
    close(back, x, 1e-3)
    batch = fx.fft.stft(fx.array(np.stack([x, 2 * x])), n_fft=n_fft)
    assert batch.shape[0] == 2
    two = fx.fft.istft(batch, n_fft=n_fft, length=100)
    close(two[1], 2 * x, 1e-3)
    with pytest.raises(ValueError):
        fx.fft.stft(fx.array(x), n_fft=16, pad_mode="wrap")


def test_grad_argnames_differentiates_keyword_arguments():
    f = lambda x, y=1.0: (x * y).sum()  # noqa: E731
    pos, named = fx.grad(f, argnames="y")(fx.array(2.0), y=fx.array(3.0))
    assert pos is None and named["y"].item() == 2.0
    g, named = fx.grad(f, argnums=0, argnames=["y"])(fx.array(2.0), y=fx.array(3.0))
    assert g.item() == 3.0 and named["y"].item() == 2.0
    v, (pos, named) = fx.value_and_grad(f, argnames=["y"])(fx.array(2.0), y=fx.array(3.0))
    assert v.item() == 6.0 and named["y"].item() == 2.0
    with pytest.raises(ValueError):
        fx.grad(f, argnames="z")(fx.array(2.0), y=fx.array(3.0))


def test_linspace_endpoint_and_complex_normal():
    np.testing.assert_allclose(np.array(fx.linspace(0, 1, 4, endpoint=False)), np.linspace(0, 1, 4, endpoint=False))
    z = np.array(fx.random.normal((20000,), dtype=fx.complex64, loc=1 + 1j, scale=2.0, key=fx.random.key(0)))
    assert z.dtype == np.complex64
    assert abs(z.real.var() - 2.0) < 0.15 and abs(z.imag.var() - 2.0) < 0.15
    assert abs(z.real.mean() - 1.0) < 0.05 and abs(z.imag.mean() - 1.0) < 0.05


def test_shapeless_compile_replays_reshapes_matmul_and_take_on_new_shapes():
    f = fx.compile(lambda x: fx.unflatten(x, -1, (4, -1)), shapeless=True)
    assert f(fx.zeros((1, 1, 128))).shape == (1, 1, 4, 32)
    assert f(fx.zeros((2, 3, 64))).shape == (2, 3, 4, 16)
    g = fx.compile(lambda x: x.reshape(-1, 2).sum(0) + x.flatten().sum(), shapeless=True)
    assert g(fx.ones((4,))).tolist() == [6.0, 6.0]
    assert g(fx.ones((6,))).tolist() == [9.0, 9.0]
    mm = fx.compile(lambda c, a, b: fx.addmm(c, a, b.T), shapeless=True)
    assert mm(fx.ones((2, 4)), fx.ones((2, 3)), fx.ones((4, 3))).shape == (2, 4)
    assert mm(fx.ones((3, 2)), fx.ones((3, 5)), fx.ones((2, 5))).tolist() == [[6.0, 6.0]] * 3
    t = fx.compile(lambda x: fx.take(x, fx.array(0), axis=1), shapeless=True)
    assert t(fx.zeros((1, 1, 32))).shape == (1, 32)
    assert t(fx.zeros((2, 3, 8))).shape == (2, 8)


def test_complex_round_log1p_logaddexp_and_logcumsumexp_follow_numpy():
    rng = np.random.default_rng(3)
    z = (rng.normal(size=(4, 6)) * 3 + 1j * rng.normal(size=(4, 6)) * 3).astype(np.complex64)
    w = (rng.normal(size=(4, 6)) + 1j * rng.normal(size=(4, 6))).astype(np.complex64)
    np.testing.assert_allclose(np.array(fx.round(fx.array(z))), np.round(z))
    np.testing.assert_allclose(np.array(fx.round(fx.array(z), 1)), np.round(z, 1), rtol=1e-6)
    np.testing.assert_allclose(np.array(fx.log1p(fx.array(w))), np.log1p(w), rtol=1e-5, atol=1e-5)
    want = np.log(np.exp(z.astype(np.complex128)) + np.exp(w.astype(np.complex128)))
    got = np.array(fx.logaddexp(fx.array(z), fx.array(w)))
    # Compare as exp, so the imaginary parts' 2*pi branch does not matter.
    np.testing.assert_allclose(np.exp(got), np.exp(want), rtol=1e-4)
    for axis, reverse in [(1, False), (0, True), (None, False)]:
        got = np.array(fx.logcumsumexp(fx.array(z), axis=axis, reverse=reverse))
        zz = z.astype(np.complex128)
        flat = zz.reshape(-1) if axis is None else zz
        ax = 0 if axis is None else axis
        seq = np.flip(flat, ax) if reverse else flat
        ref = np.log(np.cumsum(np.exp(seq), axis=ax))
        ref = np.flip(ref, ax) if reverse else ref
        np.testing.assert_allclose(np.exp(got), np.exp(ref), rtol=1e-4)


def test_arange_integer_steps_and_inferred_int64():
    assert fx.arange(0, 3, 0.2, dtype=fx.int32).tolist() == np.arange(0, 3, 0.2, dtype=np.int32).tolist()
    assert fx.arange(-1, -20, -1.2, dtype=fx.int32).tolist() == np.arange(-1, -20, -1.2, dtype=np.int32).tolist()
    big = fx.arange(2**40, 2**40 + 3)
    assert big.dtype == fx.int64 and big.tolist() == [2**40, 2**40 + 1, 2**40 + 2]
    assert fx.arange(5).dtype == fx.int32


def test_asarray_copy_false_raises_as_mlx():
    with pytest.raises(ValueError):
        fx.asarray(np.arange(4), copy=False)
    with pytest.raises(ValueError):
        fx.asarray(fx.array([1, 2]), copy=False)
    assert fx.asarray(np.arange(3), copy=True).tolist() == [0, 1, 2]


def test_arange_keyword_stop_and_infinite_steps():
    assert fx.arange(stop=3).tolist() == [0, 1, 2]
    big = fx.arange(stop=2, step=2**40)
    assert big.dtype == fx.int64 and big.tolist() == [0]
    assert fx.arange(10, 0, float("inf")).tolist() == []
    assert fx.arange(0, 10, float("inf")).tolist() == np.arange(0, 10, np.inf).tolist()
    with pytest.raises(ValueError):
        fx.arange(0, float("inf"), 1)
    with pytest.raises(TypeError):
        fx.arange()


def test_arange_positional_and_keyword_bounds_follow_mlx_overloads():
    assert fx.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert fx.arange(1, stop=4).tolist() == [1, 2, 3]
    assert fx.arange(-3, None, -1).tolist() == [0, -1, -2]
    assert fx.arange(0, 10, 3, fx.float32).tolist() == [0.0, 3.0, 6.0, 9.0]
    with pytest.raises(TypeError, match="keyword start needs a stop"):
        fx.arange(start=1, step=2)
    with pytest.raises(TypeError, match="multiple values"):
        fx.arange(1, 2, stop=3)
    with pytest.raises(TypeError, match="at most 4"):
        fx.arange(1, 2, 1, fx.int32, 5)


def test_python_floats_keep_double_precision_with_float64_arrays():
    a = fx.array([1.0], dtype=fx.float64)
    for v in (0.1, 1e-4, np.pi, 1e300, 1e-300):
        assert (a * v).dtype == fx.float64 and (a * v).tolist() == [v]
    assert fx.full((3,), 0.37, dtype=fx.float64).tolist() == [0.37] * 3
    assert fx.maximum(fx.zeros((1,), dtype=fx.float64), 0.1).tolist() == [0.1]
    assert fx.where(fx.array([False]), a, 0.1).tolist() == [0.1]
    # Still weak: a float32 array stays float32, an int32 one becomes float32.
    assert (fx.array([1.0]) * 0.1).dtype == fx.float32
    assert (fx.array([1]) * 0.1).dtype == fx.float32


def test_vecdot_and_segmented_mm_refuse_mismatched_operands():
    with pytest.raises(ValueError, match="vecdot"):
        fx.vecdot(fx.array([1, 2]), fx.array([1]))
    assert fx.vecdot(fx.array([[1, 2], [3, 4]]), fx.array([1, 1])).tolist() == [3, 7]
    seg = fx.array([[0, 5], [5, 10]]).astype(fx.uint32)
    with pytest.raises(ValueError, match="segmented_mm"):
        fx.segmented_mm(fx.ones((2, 10, 10)), fx.ones((2, 10, 10)), seg)


def test_put_along_axis_accepts_empty_float_indices():
    e = fx.array([], fx.float32)
    out = fx.put_along_axis(e, e, e, axis=None)
    assert out.shape == (0,) and out.tolist() == []
    with pytest.raises(ValueError):
        fx.put_along_axis(fx.zeros((2,)), fx.array([0.0]), fx.array([1.0]), axis=None)


def test_half_precision_products_accumulate_in_float32():
    rng = np.random.default_rng(4)
    for m, k, n in [(1, 256, 16), (4, 256, 1), (3, 64, 5)]:
        a = rng.uniform(-0.1, 0.1, (m, k)).astype(np.float16)
        b = rng.uniform(-0.1, 0.1, (k, n)).astype(np.float16)
        want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
        for dt in (fx.float16, fx.bfloat16):
            got = np.array((fx.array(a).astype(dt) @ fx.array(b).astype(dt)).astype(fx.float32))
            ref = want if dt == fx.float16 else np.array(
                (fx.array(a).astype(dt).astype(fx.float32) @ fx.array(b).astype(dt).astype(fx.float32))
                .astype(dt).astype(fx.float32))
            np.testing.assert_array_equal(got, ref.astype(np.float32))


def test_shapeless_compile_of_like_constructors_and_gather_mm_follows_the_inputs():
    zeros = fx.compile(lambda x: fx.zeros_like(x), shapeless=True)
    full = fx.compile(lambda x: fx.full_like(x, 3, dtype=fx.int32), shapeless=True)
    assert zeros(fx.ones((1, 1, 32))).shape == (1, 1, 32)
    assert zeros(fx.ones((2, 2, 16))).shape == (2, 2, 16)
    assert full(fx.ones((2, 3))).tolist() == [[3, 3, 3]] * 2
    assert full(fx.ones((4,))).tolist() == [3] * 4
    idx = fx.array([0, 1, 2, 3])
    b = fx.array(np.random.default_rng(5).normal(size=(4, 8, 5)).astype(np.float32))
    mm = fx.compile(lambda x: fx.gather_mm(x, b, lhs_indices=idx, rhs_indices=idx), shapeless=True)
    for rows in (2, 3):
        x = fx.ones((4, rows, 8))
        close(mm(x), np.array(fx.gather_mm(x, b, lhs_indices=idx, rhs_indices=idx)))


def test_conv1d_of_higher_rank_inputs_convolves_every_spatial_axis():
    x = np.random.default_rng(6).normal(size=(1, 5, 5, 2)).astype(np.float32)
    w = np.random.default_rng(7).normal(size=(2, 3, 3, 1)).astype(np.float32)
    got = fx.conv1d(fx.array(x), fx.array(w), groups=2)
    close(got, np.array(fx.conv2d(fx.array(x), fx.array(w), groups=2)))


def test_bad_indices_raise_an_error_that_is_both_index_and_value_error():
    with pytest.raises(IndexError):
        fx.array(0)[0]
    with pytest.raises(ValueError):
        a = fx.array(0)
        a[0] = fx.array(1)
    assert issubclass(fx.IndexingError, IndexError) and issubclass(fx.IndexingError, ValueError)


def test_from_dlpack_of_a_tensor_numpy_cannot_take_is_a_value_error():
    class NoTensor:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, *args, **kwargs):
            raise BufferError("this producer has no CPU tensor to share")

    with pytest.raises(ValueError, match="from_dlpack"):
        fx.from_dlpack(NoTensor())
    assert fx.from_dlpack(np.arange(3)).tolist() == [0, 1, 2]


def test_from_dlpack_keeps_the_producers_strides():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for view in (x.T, np.arange(20, dtype=np.int32)[2:10:2],
                 np.broadcast_to(np.array([7], dtype=np.int32), (3,)),
                 np.arange(24, dtype=np.float64).reshape(2, 3, 4)[:, ::2, 1:]):
        y = fx.from_dlpack(view)
        assert y.tolist() == view.astype(np.float32 if view.dtype == np.float64 else view.dtype).tolist()
        m = memoryview(y)
        assert not m.c_contiguous
        assert m.strides == tuple(s // view.itemsize * m.itemsize for s in view.strides)
    # Later writes to the producer are not seen: the span was copied.
    v = x.T
    y = fx.from_dlpack(v)
    x += 100
    assert y.tolist()[0] == [0.0, 4.0, 8.0]
    with pytest.raises(ValueError, match="negative strides"):
        fx.from_dlpack(np.arange(5, dtype=np.float32)[::-1])


def test_a_shapeless_compiled_gradient_of_a_reduction_follows_new_shapes():
    def loss(args):
        x, w = args
        return (fx.tanh(x) * w).sum() + fx.logsumexp(x, axis=-1).sum() + x.max()

    g = fx.compile(fx.grad(loss), shapeless=True)
    rng = np.random.default_rng(0)
    for shape in [(2, 3), (5, 3), (4, 7)]:
        x = fx.array(rng.standard_normal(shape).astype(np.float32))
        w = fx.array(rng.standard_normal(shape).astype(np.float32))
        got = g((x, w))
        want = fx.grad(loss)((x, w))
        for a, b in zip(got, want):
            assert a.shape == shape
            assert np.allclose(np.array(a), np.array(b), atol=1e-5)
