import threading

import numpy as np
import pytest

import ferrox.core as fx


def assert_close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# Every wait in a thread test has this watchdog, so a deadlock fails.
TIMEOUT = 60


def run_threads(n, target):
    """Runs target(i) on n threads; re-raises the first error, and fails if
    a thread is still running after TIMEOUT."""
    errors = []

    def wrap(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock?)"
    if errors:
        raise errors[0]
