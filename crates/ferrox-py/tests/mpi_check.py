"""ferrox.core.distributed across processes: run by scripts/test-mpi.sh as
``mpirun -np 2 python mpi_check.py`` (not a pytest file: every rank must run
the same checks in the same order). Exits non-zero on the first failure."""

import sys
import threading

import ferrox.core as mx
import ferrox.nn as nn

dist = mx.distributed


def main():
    world = dist.init(strict=True, backend="mpi")
    r, n = world.rank(), world.size()
    assert n >= 2, n

    for dtype in [mx.bool_, mx.uint8, mx.int16, mx.int32, mx.int64, mx.float16,
                  mx.bfloat16, mx.float32, mx.float64, mx.complex64]:
        x = ((mx.arange(2 * n * 3).reshape(2 * n, 3) + r) % 5).astype(dtype)
        xs = [((mx.arange(2 * n * 3).reshape(2 * n, 3) + k) % 5).astype(dtype)
              for k in range(n)]
        stacked = mx.stack(xs)
        if dtype != mx.bool_:
            want = stacked.sum(0).astype(dtype)
        else:
            want = stacked.any(0)
        assert mx.array_equal(dist.all_sum(x), want).item(), ("all_sum", dtype)
        if dtype != mx.complex64:
            assert mx.array_equal(dist.all_max(x), stacked.max(0)).item(), ("all_max", dtype)
            assert mx.array_equal(dist.all_min(x), stacked.min(0)).item(), ("all_min", dtype)
        assert mx.array_equal(dist.all_gather(x), mx.concatenate(xs)).item(), ("gather", dtype)
        assert mx.array_equal(dist.sum_scatter(x), want[2 * r:2 * r + 2]).item(), dtype

    # send/recv between pairs (0 <-> 1, 2 <-> 3, ...).
    pairs = world.split(r // 2)
    if pairs.size() == 2:
        peer = 1 - pairs.rank()
        mine = mx.full((1000,), float(r))
        if pairs.rank() == 0:
            mx.eval(dist.send(mine, peer, group=pairs))
            got = dist.recv_like(mine, peer, group=pairs)
        else:
            got = dist.recv_like(mine, peer, group=pairs)
            mx.eval(got)
            mx.eval(dist.send(mine, peer, group=pairs))
        other = r + 1 if pairs.rank() == 0 else r - 1
        assert got.tolist() == [float(other)] * 1000

    # Threads with their own groups, all at once.
    groups = [world.split(0) for _ in range(4)]
    errors = []

    def work(t, g):
        try:
            for i in range(20):
                y = dist.all_sum(mx.full((16,), float(r + t + i)), group=g)
                assert y.tolist() == [float(sum(k + t + i for k in range(n)))] * 16
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t, g)) for t, g in enumerate(groups)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread hung"
    assert not errors, errors

    # A compiled step, gradients, average_gradients.
    step = mx.compile(lambda x: dist.all_sum(x * 2))
    assert step(mx.full((3,), float(r))).tolist() == [float(2 * sum(range(n)))] * 3
    g = mx.grad(lambda x: (dist.all_sum(x) * x).sum())(mx.full((2,), float(r + 1)))
    assert g.tolist() == [float(sum(range(1, n + 1)) + r + 1)] * 2
    grads = {"w": mx.full((3, 2), float(r)), "b": [mx.full((5,), float(2 * r))]}
    mean = sum(range(n)) / n
    for size in (32 * 1024 ** 2, 0, 8):
        avg = nn.average_gradients(grads, all_reduce_size=size)
        assert avg["w"].tolist() == [[mean] * 2] * 3, size
        assert avg["b"][0].tolist() == [2 * mean] * 5, size
    check_fully_shard(world)
    if r == 0:
        print(f"mpi_check.py: every check passed on {n} processes")


def check_fully_shard(world):
    """fully_shard against the unsharded model: the same forward on every
    rank, and each rank's gradient is its shard of the group's mean
    gradient."""
    from ferrox.utils import tree_flatten

    r, n = world.rank(), world.size()

    def mlp():
        mx.random.seed(5)  # the same weights on every rank
        return nn.Sequential(nn.Linear(4, 4 * n), nn.ReLU(), nn.Linear(4 * n, 2 * n))

    def loss(model, x):
        return (model(x) ** 2).sum()

    plain, sharded = mlp(), nn.fully_shard(mlp(), group=world)
    assert isinstance(sharded, nn.FullyShardedModule)
    x = mx.arange(12, dtype=mx.float32).reshape(3, 4) / 10 + r
    assert mx.allclose(sharded(x), plain(x), atol=1e-5).item(), "fully_shard forward"
    _, g_plain = nn.value_and_grad(plain, loss)(plain, x)
    _, g_sharded = nn.value_and_grad(sharded, loss)(sharded, x)
    got = dict(tree_flatten(g_sharded))
    for k, g in tree_flatten(g_plain):
        mean = dist.all_sum(g, group=world) / n
        rows = g.shape[0] // n
        want = mean[r * rows:(r + 1) * rows]
        assert mx.allclose(got["module." + k], want, atol=1e-4).item(), ("fully_shard grad", k)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - any failure ends the job
        print(f"mpi_check.py: FAILED on rank {dist.init().rank()}: {e!r}", file=sys.stderr)
        sys.exit(1)
