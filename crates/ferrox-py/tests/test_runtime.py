"""Devices, streams and memory functions."""

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
