"""Devices, streams and memory functions."""

import pytest

import ferrox.core as fx


def test_devices_and_streams():
    assert fx.default_device() == fx.Device(fx.cpu)
    assert fx.default_device().type == fx.cpu
    s0 = fx.default_stream(fx.cpu)
    assert s0 == fx.default_stream(fx.default_device())
    s1, s2 = fx.new_stream(fx.cpu), fx.new_stream(fx.cpu)
    assert s1 != s2 and s1 != s0
    assert s1.device == fx.Device(fx.cpu, 0)
    fx.set_default_device(fx.cpu)
    fx.set_default_device(fx.Device(fx.cpu))
    assert "Stream" in repr(s1)
    assert fx.is_available(fx.cpu)


def test_a_gpu_can_be_named_but_not_used():
    # As mlx.core on a machine without a GPU: the names exist, report that
    # nothing is available, and using them is a ValueError.
    assert not fx.is_available(fx.gpu)
    assert not fx.is_available(fx.Device(fx.cpu, 1))
    assert not fx.metal.is_available() and not fx.cuda.is_available()
    import ferrox.core.metal  # noqa: F401  (importable like mlx.core.metal)
    gpu = fx.Device(fx.gpu)
    assert (gpu.type, gpu.index, str(gpu)) == (fx.gpu, 0, "Device(gpu, 0)")
    assert gpu == fx.gpu and fx.gpu == gpu and gpu != fx.cpu
    assert fx.Device(fx.cpu) == fx.cpu and fx.cpu == fx.Device(fx.cpu)
    assert len({fx.Device(fx.cpu), fx.Device(fx.cpu, 0), gpu}) == 2
    for use in (fx.set_default_device, fx.default_stream, fx.new_stream):
        with pytest.raises(ValueError, match="gpu"):
            use(fx.gpu)
    with pytest.raises(ValueError, match="not available"):
        fx.add(fx.array(1.0), 1.0, stream=fx.gpu)
    assert fx.default_device() == fx.cpu


def test_stream_context_manager():
    s = fx.new_stream(fx.cpu)
    with fx.stream(s) as entered:
        assert entered == s
        x = fx.exp(fx.zeros((4,)))
    fx.async_eval(x)
    fx.synchronize(s)
    assert x.tolist() == [1, 1, 1, 1]
    fx.synchronize()


def test_memory_functions():
    fx.reset_peak_memory()
    x = fx.ones((1000,))
    fx.eval(x)
    assert fx.get_active_memory() >= 4000
    assert fx.get_peak_memory() >= 4000
    assert fx.get_cache_memory() >= 0
    old = fx.set_cache_limit(1 << 30)
    fx.set_cache_limit(old)
    old = fx.set_memory_limit(1 << 40)
    fx.set_memory_limit(old)
    fx.clear_cache()


def test_aliases_and_constants():
    import math

    for alias, name in [("acos", "arccos"), ("asin", "arcsin"), ("atan", "arctan"),
                        ("acosh", "arccosh"), ("asinh", "arcsinh"), ("atanh", "arctanh"),
                        ("atan2", "arctan2"), ("pow", "power"), ("concat", "concatenate"),
                        ("permute_dims", "transpose")]:
        assert getattr(fx, alias) is getattr(fx, name), alias
    assert (fx.pi, fx.e, fx.inf) == (math.pi, math.e, math.inf)
    assert math.isnan(fx.nan) and fx.newaxis is None
    assert abs(fx.euler_gamma - 0.5772156649015329) < 1e-16
    assert fx.pow(fx.array([2.0]), 3).tolist() == [8.0]
    assert fx.zeros((2, 3))[:, fx.newaxis].shape == (2, 1, 3)
