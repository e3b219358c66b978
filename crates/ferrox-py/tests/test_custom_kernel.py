"""fast.metal_kernel / fast.cuda_kernel on a build without a GPU back-end:
argument checks, the CPU refused, a call recorded only inside
export_function, and a recorded kernel that raises when run (as a CPU
build of MLX behaves)."""

import pytest

import ferrox.core as fx


def _copy_kernel(**kw):
    return fx.fast.metal_kernel(
        name="copy",
        input_names=["a"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = a[i];",
        **kw,
    )


def _launch(kernel, a, stream=fx.gpu, **kw):
    return kernel(
        inputs=[a],
        grid=(a.size, 1, 1),
        threadgroup=(min(a.size, 256), 1, 1),
        output_shapes=[a.shape],
        output_dtypes=[a.dtype],
        stream=stream,
        **kw,
    )


def test_a_call_outside_an_export_names_the_missing_back_end():
    k = _copy_kernel()
    a = fx.zeros((2, 2))
    with pytest.raises(RuntimeError, match="No Metal back-end"):
        _launch(k, a)
    with pytest.raises(RuntimeError, match="No Metal back-end"):
        fx.eval(fx.compile(lambda x: _launch(k, x))(a))
    cuda = fx.fast.cuda_kernel("copy", ["a"], ["out"], "out[0] = a[0];")
    with pytest.raises(RuntimeError, match="No CUDA back-end"):
        _launch(cuda, a)


def test_argument_errors():
    with pytest.raises(ValueError, match="at least one output"):
        fx.fast.metal_kernel("k", ["a"], [], "")
    with pytest.raises(ValueError, match="math_mode"):
        _copy_kernel(compile_options={"math_mode": "exact"})
    with pytest.raises(ValueError, match="Unknown compile option"):
        _copy_kernel(compile_options={"fast_math": True})
    with pytest.raises(ValueError, match="be a dict"):
        _copy_kernel(compile_options=["safe"])
    k = _copy_kernel()
    a = fx.zeros((4,))
    with pytest.raises(ValueError, match="`inputs` to have size 1 but got size 2"):
        k(
            inputs=[a, a],
            grid=(4, 1, 1),
            threadgroup=(4, 1, 1),
            output_shapes=[(4,)],
            output_dtypes=[fx.float32],
        )
    with pytest.raises(TypeError, match="template argument"):
        _launch(k, a, template=[("T", "float")])


def test_export_records_the_kernel_and_the_import_raises_when_run(tmp_path):
    k = _copy_kernel(compile_options={"math_mode": "safe"})
    a = fx.zeros((2, 2))

    def call(x):
        return _launch(k, x, template=[("T", fx.float32), ("N", 4), ("B", True)])[0]

    for shapeless in (False, True):
        path = str(tmp_path / f"k_{shapeless}.mlxfn")
        fx.export_function(path, call, a, shapeless=shapeless)
        f = fx.import_function(path)
        with pytest.raises(RuntimeError, match="No Metal back-end"):
            fx.eval(f(a))

    with pytest.raises(ValueError, match="Only supports the GPU"):
        fx.export_function(
            str(tmp_path / "cpu.mlxfn"), lambda x: _launch(k, x, stream=fx.cpu)[0], a
        )
    # A recorded node's output has the launch's shape and dtype.
    seen = []

    def record(x):
        out = _launch(k, x)[0]
        seen.append((out.shape, out.dtype))
        return out

    fx.export_function(str(tmp_path / "shape.mlxfn"), record, a)
    assert seen == [((2, 2), fx.float32)]
