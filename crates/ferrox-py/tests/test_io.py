"""ferrox.core's load/save: round trips of every dtype, paths, pathlib and
file objects, metadata, bad files, and cross-checks against numpy, the
`safetensors` package, `gguf` (llama.cpp's Python package) and mlx (each
skipped when the package is absent)."""
import io
import os
import pathlib
import struct

import numpy as np
import pytest

import ferrox.core as fx

DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
          "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64"]
GGUF_DTYPES = ["float32", "float16", "bfloat16", "float64", "int8", "int16",
               "int32", "int64"]


def sample(dtype, shape=(3, 4)):
    n = int(np.prod(shape))
    x = fx.arange(n).reshape(shape) if n else fx.zeros(shape)
    if dtype == "bool_":
        x = (x % 3) == 0
    elif dtype in ("float16", "bfloat16", "float32", "float64", "complex64"):
        x = (x - 3) * 0.75
    elif dtype.startswith("int"):
        x = x - 5
    return x.astype(getattr(fx, dtype))


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and fx.array_equal(a, b).item()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (1,), (23,), (4, 6, 3, 1, 2), (0, 3)])
def test_npy_round_trip(tmp_path, dtype, shape):
    a = sample(dtype, shape)
    fx.save(str(tmp_path / "a"), a)  # .npy is appended
    assert same(fx.load(str(tmp_path / "a.npy")), a)


def test_npy_is_numpy_compatible(tmp_path):
    for dt in ["bool_", "uint8", "int16", "uint64", "float16", "float32",
               "float64", "complex64"]:
        a = sample(dt)
        fx.save(tmp_path / f"{dt}.npy", a)
        np.testing.assert_array_equal(np.load(tmp_path / f"{dt}.npy"), np.array(a))
        n = np.array(a)
        np.save(tmp_path / f"np_{dt}.npy", n)
        assert same(fx.load(tmp_path / f"np_{dt}.npy"), a)
    # numpy's Fortran order and big-endian files.
    f = np.asfortranarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    np.save(tmp_path / "f.npy", f)
    np.testing.assert_array_equal(np.array(fx.load(tmp_path / "f.npy")), f)
    b = np.arange(5, dtype=">f4")
    np.save(tmp_path / "b.npy", b)
    np.testing.assert_array_equal(np.array(fx.load(tmp_path / "b.npy")), b)


def test_npz_round_trip_and_numpy(tmp_path):
    arrays = {dt: sample(dt) for dt in DTYPES}
    for compressed in (False, True):
        save = fx.savez_compressed if compressed else fx.savez
        path = tmp_path / f"all_{compressed}"
        save(str(path), **arrays)
        back = fx.load(str(path) + ".npz")
        assert sorted(back) == sorted(arrays)
        for k, v in arrays.items():
            assert same(back[k], v), k
        with np.load(str(path) + ".npz") as z:
            np.testing.assert_array_equal(z["float32"], np.array(arrays["float32"]))
            np.testing.assert_array_equal(z["bool_"], np.array(arrays["bool_"]))
    fx.savez(tmp_path / "pos.npz", fx.ones(2), fx.zeros(3), c=fx.ones(1))
    assert sorted(fx.load(tmp_path / "pos.npz")) == ["arr_0", "arr_1", "c"]
    with pytest.raises(ValueError):
        fx.savez(tmp_path / "dup.npz", fx.ones(2), arr_0=fx.ones(1))
    np.savez_compressed(tmp_path / "np.npz", x=np.arange(6.0).reshape(2, 3), y=np.ones(2, bool))
    back = fx.load(tmp_path / "np.npz")
    np.testing.assert_array_equal(np.array(back["x"]), np.arange(6.0).reshape(2, 3))
    assert back["y"].dtype == fx.bool_


def test_safetensors_round_trip_every_dtype(tmp_path):
    arrays = {dt: sample(dt) for dt in DTYPES}
    arrays["empty"] = fx.zeros((0, 3))
    meta = {"format": "mlx", "note": "ünï"}
    fx.save_safetensors(tmp_path / "m", arrays, meta)
    back, m = fx.load(tmp_path / "m.safetensors", return_metadata=True)
    assert m == meta
    for k, v in arrays.items():
        assert same(back[k], v), k
    with pytest.raises(ValueError):
        fx.save_safetensors(tmp_path / "bad", arrays, {"x": 1})


@pytest.mark.parametrize("dtype", GGUF_DTYPES)
def test_gguf_round_trip(tmp_path, dtype):
    a = sample(dtype, (4, 6, 3, 1, 2))
    fx.save_gguf(tmp_path / "g", {"a": a})
    assert same(fx.load(tmp_path / "g.gguf")["a"], a)


def test_gguf_metadata(tmp_path):
    arrays = {"w": fx.ones((2, 2), dtype=fx.int32)}
    meta = {
        "s": "text",
        "l": ["a", "bb", ""],
        "u8": fx.array(7, fx.uint8),
        "i64v": fx.array([1, -2, 3], fx.int64),
        "f": fx.array(1.5),
        "b": fx.array(True),
    }
    fx.save_gguf(tmp_path / "m.gguf", arrays, meta)
    _, m = fx.load(tmp_path / "m.gguf", return_metadata=True)
    assert m["s"] == "text" and m["l"] == ["a", "bb", ""]
    for k in ("u8", "i64v", "f", "b"):
        assert same(m[k], meta[k]), k
    for dt in (fx.float16, fx.bfloat16, fx.complex64):
        with pytest.raises(ValueError):
            fx.save_gguf(tmp_path / "x.gguf", arrays, {"m": fx.array(1, dt)})
    with pytest.raises(ValueError):
        fx.save_gguf(tmp_path / "x.gguf", arrays, {"m": fx.ones((2, 2))})
    with pytest.raises(TypeError):
        fx.save_gguf(tmp_path / "x.gguf", {"b": fx.ones(2, dtype=fx.bool_)})


def test_file_objects_and_pathlib(tmp_path):
    a = sample("float32")
    for name, saver in [
        ("x.npy", lambda f: fx.save(f, a)),
        ("x.safetensors", lambda f: fx.save_safetensors(f, {"a": a})),
        ("x.npz", lambda f: fx.savez(f, a=a)),
    ]:
        with open(tmp_path / name, "wb") as f:
            saver(f)
        with open(tmp_path / name, "rb") as f:
            got = fx.load(f)
        got = got if name.endswith(".npy") else got["a"]
        assert same(got, a), name
        buf = io.BytesIO()
        saver(buf)
        buf.seek(0)
        got = fx.load(buf, format=name.split(".")[1])
        got = got if name.endswith(".npy") else got["a"]
        assert same(got, a), name
    with pytest.raises(ValueError):
        fx.load(io.BytesIO(b"x"))  # no name, no format
    p = pathlib.Path(tmp_path) / "p.npy"
    fx.save(p, a)
    assert same(fx.load(p), a)


def test_return_shapes_and_errors(tmp_path):
    fx.save(tmp_path / "a.npy", fx.ones(2))
    with pytest.raises(ValueError):
        fx.load(tmp_path / "a.npy", return_metadata=True)
    with pytest.raises(FileNotFoundError):
        fx.load(tmp_path / "missing.npy")
    with pytest.raises(ValueError):
        fx.load(tmp_path / "a.npy", format="pt")
    (tmp_path / "bad.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(ValueError, match="bad.safetensors"):
        fx.load(tmp_path / "bad.safetensors")
    (tmp_path / "bad.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 7, 0, 0))
    with pytest.raises(ValueError, match="version 7"):
        fx.load(tmp_path / "bad.gguf")
    (tmp_path / "bad.npz").write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match="zip"):
        fx.load(tmp_path / "bad.npz")
    with pytest.raises(TypeError):
        fx.load(42)


def test_truncated_npy_fails_at_eval(tmp_path):
    np.save(tmp_path / "t.npy", np.arange(16, dtype=np.float32))
    with open(tmp_path / "t.npy", "r+b") as f:
        f.truncate(os.path.getsize(tmp_path / "t.npy") - 8)
    out = fx.load(tmp_path / "t.npy")
    with pytest.raises(RuntimeError, match="truncated"):
        fx.eval(out)


def test_quantized_gguf_loads_as_packed_triplet(tmp_path):
    rows, cols = 2, 64
    rng = np.random.default_rng(7)
    d = np.full((rows * cols // 32, 1), 0.5, np.float16)
    q8 = rng.integers(-128, 128, (rows * cols // 32, 32)).astype(np.int8)
    blocks = np.concatenate([d.view(np.uint8), q8.view(np.uint8)], axis=1)
    with open(tmp_path / "q.gguf", "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 1, 0))
        f.write(struct.pack("<Q", 8) + b"w.weight")
        f.write(struct.pack("<IQQIQ", 2, cols, rows, 8, 0))
        f.write(b"\0" * (-f.tell() % 32))
        f.write(blocks.tobytes())
    got = fx.load(tmp_path / "q.gguf")
    assert sorted(got) == ["w.biases", "w.scales", "w.weight"]
    w, s, b = got["w.weight"], got["w.scales"], got["w.biases"]
    assert w.dtype == fx.uint32 and w.shape == (rows, cols // 4)
    assert s.dtype == fx.float16 and s.shape == (rows, cols // 32) == b.shape
    v = fx.dequantize(w, s, b, group_size=32, bits=8)
    np.testing.assert_array_equal(np.array(v.astype(fx.float32)),
                                  (d.astype(np.float32) * q8).reshape(rows, cols))


def test_gguf_package_quantized_types_match_its_dequantize(tmp_path):
    gguf = pytest.importorskip("gguf")
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import dequantize

    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(str(tmp_path / "k.gguf"), "test")
    expected = {}
    for q in [Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.Q2_K, Q.Q4_K, Q.Q5_K, Q.Q6_K]:
        block, nbytes = gguf.GGML_QUANT_SIZES[q]
        raw = rng.integers(0, 256, (2, 256 // block * nbytes), dtype=np.uint8)
        # Scales must be finite: set every f16 field's exponent bits small
        # by drawing them again from a safe range.
        raw = raw.reshape(-1, nbytes)
        raw = _finite_halves(q, raw)
        raw = raw.reshape(2, -1)
        writer.add_tensor(q.name, raw, raw_dtype=q)
        expected[q.name] = dequantize(raw, q)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    got = fx.load(tmp_path / "k.gguf")
    packed = {"Q4_0": 4, "Q4_1": 4, "Q8_0": 8}  # MLX's (weight, scales, biases)
    for name, want in expected.items():
        if name in packed:
            # float32 scales: the dequantized values are then computed as
            # the reference computes them.
            s, b = (got[f"{name}.{k}"].astype(fx.float32) for k in ("scales", "biases"))
            got[name] = fx.dequantize(got[name], s, b, group_size=32, bits=packed[name])
        np.testing.assert_allclose(np.array(got[name]), want, rtol=1e-6, atol=1e-6, err_msg=name)


def _finite_halves(q, raw):
    """Overwrites the f16 scale fields of each block with small finite values."""
    from gguf import GGMLQuantizationType as Q
    spots = {Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
             Q.Q2_K: [80, 82], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208]}[q]
    raw = raw.copy()
    vals = np.linspace(-1, 1, raw.shape[0] * len(spots)).astype(np.float16).view(np.uint8)
    vals = vals.reshape(raw.shape[0], len(spots), 2)
    for i, s in enumerate(spots):
        raw[:, s:s + 2] = vals[:, i]
    return raw


def test_safetensors_package_cross_check(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    arrays = {"f": np.arange(6, dtype=np.float32).reshape(2, 3),
              "h": np.ones(4, np.float16), "i": np.arange(3, dtype=np.int64),
              "b": np.array([True, False])}
    st.save_file(arrays, str(tmp_path / "p.safetensors"), metadata={"k": "v"})
    got, meta = fx.load(tmp_path / "p.safetensors", return_metadata=True)
    assert meta == {"k": "v"}
    for k, v in arrays.items():
        np.testing.assert_array_equal(np.array(got[k]), v)
    fx.save_safetensors(tmp_path / "f.safetensors", {k: fx.array(v) for k, v in arrays.items()})
    back = st.load_file(str(tmp_path / "f.safetensors"))
    for k, v in arrays.items():
        np.testing.assert_array_equal(back[k], v)


def test_mlx_cross_check(tmp_path):
    mx = pytest.importorskip("mlx.core")
    # MLX's safetensors has no float64 ("received invalid dtype").
    arrays = {dt: sample(dt) for dt in DTYPES if dt != "float64"}
    as_mx = {k: mx.array(np.array(v.astype(fx.float32) if k == "bfloat16" else v))
             for k, v in arrays.items()}
    as_mx["bfloat16"] = as_mx["bfloat16"].astype(mx.bfloat16)
    mx.save_safetensors(str(tmp_path / "mlx.safetensors"), as_mx)
    got = fx.load(tmp_path / "mlx.safetensors")
    for k, v in arrays.items():
        assert same(got[k], v), k
    fx.save_safetensors(tmp_path / "fx.safetensors", arrays)
    back = mx.load(str(tmp_path / "fx.safetensors"))
    for k in arrays:
        assert str(back[k].dtype).split(".")[-1] == k.rstrip("_"), k
    gg = {k: as_mx[k] for k in ["float32", "float16", "int8", "int16", "int32"]}
    mx.save_gguf(str(tmp_path / "mlx.gguf"), gg, {"s": "x", "v": mx.array([1, 2], mx.int32)})
    got, meta = fx.load(tmp_path / "mlx.gguf", return_metadata=True)
    for k in gg:
        assert same(got[k], arrays[k]), k
    assert meta["s"] == "x" and np.array(meta["v"]).tolist() == [1, 2]
    fx.save_gguf(tmp_path / "fx.gguf", {k: arrays[k] for k in gg}, {"s": "y"})
    back, meta = mx.load(str(tmp_path / "fx.gguf"), return_metadata=True)
    assert meta["s"] == "y"
    for k in gg:
        np.testing.assert_array_equal(np.array(back[k]), np.array(arrays[k]))
    mx.save(str(tmp_path / "m.npy"), as_mx["bfloat16"])
    assert same(fx.load(tmp_path / "m.npy"), arrays["bfloat16"])
