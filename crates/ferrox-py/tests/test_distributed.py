"""ferrox.core.distributed in one process (a group of one) and
ferrox.nn.average_gradients; scripts/test-mpi.sh runs mpi_check.py across
processes."""

import os
import subprocess
import sys
import threading

import pytest

import ferrox.core as mx
import ferrox.nn as nn

dist = mx.distributed


def test_a_single_process_is_a_group_of_one():
    g = dist.init()
    assert (g.rank(), g.size()) == (0, 1)
    assert dist.init().size() == 1
    assert dist.is_available()
    assert not dist.is_available("nccl")
    assert "size=1" in repr(g)


@pytest.mark.parametrize("fn", ["all_sum", "all_max", "all_min", "all_gather", "sum_scatter"])
@pytest.mark.parametrize("dtype", [mx.bool_, mx.uint8, mx.int16, mx.int32, mx.int64,
                                   mx.float16, mx.bfloat16, mx.float32, mx.complex64])
def test_collectives_return_their_input_in_a_group_of_one(fn, dtype):
    x = mx.arange(6).reshape(2, 3).astype(dtype)
    y = getattr(dist, fn)(x)
    assert y.shape == x.shape and y.dtype == dtype
    assert mx.array_equal(y, x).item()
    assert mx.array_equal(getattr(dist, fn)(x, group=dist.init()), x).item()


def test_split_and_bad_arguments():
    g = dist.init()
    assert g.split(0).size() == 1
    assert g.split(3, key=5).size() == 1
    with pytest.raises(ValueError, match="split: color"):
        g.split(-2)
    with pytest.raises(ValueError, match="send:"):
        dist.send(mx.ones(2), 1)
    with pytest.raises(ValueError, match="recv:"):
        dist.recv((2,), mx.float32, 0)
    with pytest.raises(ValueError, match="recv:"):
        dist.recv_like(mx.ones(2), 1)
    with pytest.raises(NotImplementedError, match="ring"):
        dist.init(backend="ring")


def test_strict_init_without_a_launcher():
    # In a fresh interpreter, so that no earlier init() decided the group.
    code = ("import ferrox.core as mx\n"
            "try:\n"
            "    mx.distributed.init(strict=True)\n"
            "    print('no error')\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("init: strict"), out.stdout


def test_built_without_mpi_or_mpi_in_a_job_of_one():
    if dist.is_available("mpi"):
        pytest.skip("this build has MPI (mpi_check.py covers it)")
    code = ("import ferrox.core as mx\n"
            "try:\n"
            "    mx.distributed.init(backend='mpi')\n"
            "except NotImplementedError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "ferrox was built without MPI" in out.stdout, (out.stdout, out.stderr)


def test_gradients_and_compile_through_all_sum():
    x = mx.array([1.0, 2.0])
    g = mx.grad(lambda x: (dist.all_sum(x) * x).sum())(x)
    assert g.tolist() == [2.0, 4.0]
    f = mx.compile(lambda x: dist.all_sum(x) * 2)
    assert f(x).tolist() == [2.0, 4.0]
    assert mx.vmap(dist.all_sum)(mx.ones((3, 2))).shape == (3, 2)


def test_threads_each_with_their_own_group():
    world = dist.init()
    groups = [world.split(0) for _ in range(4)]
    errors = []

    def work(g):
        try:
            for i in range(50):
                y = dist.all_sum(mx.full((8,), float(i)), group=g)
                assert y.tolist() == [float(i)] * 8
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(g,)) for g in groups]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a thread hung"
    assert errors == []


def test_average_gradients_in_a_group_of_one():
    grads = {"a": mx.ones((2, 3)), "b": [mx.zeros((4,)), mx.full((1,), 3.0)]}
    assert nn.average_gradients(grads) is grads
    assert nn.average_gradients(grads, group=dist.init(), all_reduce_size=0) is grads


def _mlp():
    mx.random.seed(3)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))


def _loss(model, x):
    return (model(x) ** 2).sum()


def test_fully_shard_in_a_group_of_one():
    from ferrox.nn.layers.distributed import FullyShardedModule
    from ferrox.utils import tree_flatten

    plain = _mlp()
    assert nn.fully_shard(plain) is plain
    sharded = FullyShardedModule(_mlp())
    x = mx.random.normal((3, 4))
    assert mx.allclose(sharded(x), plain(x)).item()
    _, g_plain = nn.value_and_grad(plain, _loss)(plain, x)
    _, g_sharded = nn.value_and_grad(sharded, _loss)(sharded, x)
    want = dict(tree_flatten(g_plain))
    got = dict(tree_flatten(g_sharded))
    assert sorted(got) == sorted("module." + k for k in want)
    for k, v in want.items():
        assert mx.allclose(got["module." + k], v, atol=1e-5).item(), k
    assert nn.fully_shard(sharded) is sharded
    assert "num_sharded_params=4" in repr(sharded)


def test_fully_shard_calls_from_threads_leave_the_module_unchanged():
    from ferrox.nn.layers.distributed import FullyShardedModule

    sharded = FullyShardedModule(_mlp())
    before = {id(v) for v in sharded.module.layers[0].values()}
    x = mx.random.normal((2, 4))
    want = sharded(x).tolist()
    barrier, errors = threading.Barrier(4, timeout=60), []

    def work():
        try:
            barrier.wait()
            for _ in range(20):
                assert sharded(x).tolist() == want
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread hung"
    assert not errors, errors
    assert {id(v) for v in sharded.module.layers[0].values()} == before


def test_fully_shard_refuses_a_scalar_parameter():
    from ferrox.nn.layers.distributed import FullyShardedModule

    m = nn.Linear(2, 2)
    m.scale = mx.array(1.0)
    with pytest.raises(ValueError, match="scale.*scalar"):
        FullyShardedModule(m)
