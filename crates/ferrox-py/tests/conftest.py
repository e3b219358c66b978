import numpy as np
import pytest

import ferrox.core as fx


def assert_close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
