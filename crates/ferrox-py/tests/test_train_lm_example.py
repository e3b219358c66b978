"""examples/python/train_lm.py on ferrox: the model's shapes and parameter
names, the held-out split, a few training steps of a tiny model, greedy
decoding."""

import sys
from pathlib import Path

import numpy as np
import pytest

import ferrox.core as fx
import ferrox.nn as nn
import ferrox.optimizers as optim
from ferrox.utils import tree_flatten

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "python"))
import train_lm  # noqa: E402

LM = train_lm.model_class(fx, nn)


@pytest.fixture
def tiny():
    fx.random.seed(0)
    model = LM(train_lm.Config.tiny())
    fx.eval(model.parameters())
    return model


def test_logits_shape_and_parameter_names(tiny):
    tokens = fx.array(np.arange(20, dtype=np.int32).reshape(2, 10))
    assert tiny(tokens).shape == (2, 10, 256)
    names = [k for k, _ in tree_flatten(tiny.parameters())]
    assert "embed.weight" in names and "norm.weight" in names
    assert "blocks.1.down.weight" in names and "blocks.0.wk.weight" in names
    # Grouped-query attention: keys and values have kv_heads * head_dims rows.
    assert tiny.blocks[0].wk.weight.shape == (2 * 8, 32)
    # No biases, and the head is the embedding (no separate output matrix).
    assert not any(k.endswith("bias") for k in names)
    assert len(names) == 1 + 9 * 2 + 1


def test_the_demo_model_has_the_rust_models_parameter_count():
    c = train_lm.Config()
    kv = c.kv_heads * c.head_dims
    per_block = 2 * c.dims * c.dims + 2 * c.dims * kv + 3 * c.dims * c.mlp_dims + 2 * c.dims
    expected = c.vocab * c.dims + c.layers * per_block + c.dims
    assert expected == 3_016_960
    assert train_lm.parameter_count(LM(c), tree_flatten) == expected


def test_causal_a_later_byte_does_not_change_earlier_logits(tiny):
    a = np.array([[5, 6, 7, 8]], dtype=np.int32)
    b = a.copy()
    b[0, 3] = 99
    la, lb = np.array(tiny(fx.array(a))), np.array(tiny(fx.array(b)))
    np.testing.assert_allclose(la[:, :3], lb[:, :3], rtol=1e-5, atol=1e-5)
    assert not np.allclose(la[:, 3], lb[:, 3])


def test_the_held_out_rule_is_the_rust_programs():
    # SplitMix64's first output for seed 0, also asserted in the Rust
    # program's rng.rs: the two hold out the same problems.
    assert train_lm.splitmix_first(0) == 0xE220A8397B1DCDAF


def test_the_corpus_holds_no_held_out_problem():
    corpus = train_lm.Corpus(lines=3000, seed=1)
    text = bytes(corpus.data.astype(np.uint8)).decode()
    lines = text.splitlines()
    assert len(lines) == 3000
    for line in lines:
        lhs, total = line.split("=")
        a, b = map(int, lhs.split("+"))
        assert int(total) == a + b and 0 <= a < 1000 and 0 <= b < 1000
        assert not train_lm.held_out(a, b)
    problems = train_lm.held_out_problems(200, seed=1)
    assert len(set(problems)) == 200
    assert all(train_lm.held_out(a, b) for a, b in problems)
    assert not {f"{a}+{b}={a + b}" for a, b in problems} & set(lines)


def test_batches_are_shifted_windows_from_line_starts():
    corpus = train_lm.Corpus(lines=500, seed=2)
    x, y = corpus.batch(np.random.default_rng(0), 4, 24)
    assert x.shape == y.shape == (4, 24) and x.dtype == np.int32
    np.testing.assert_array_equal(x[:, 1:], y[:, :-1])
    starts = set(corpus.starts.tolist())
    for row in x:
        at = int(np.flatnonzero(np.all(
            np.lib.stride_tricks.sliding_window_view(corpus.data, 24) == row, axis=1))[0])
        assert at in starts


def test_a_few_compiled_steps_lower_the_loss(tiny):
    corpus = train_lm.Corpus(lines=500, seed=3)
    x, y = corpus.batch(np.random.default_rng(3), 4, 32)
    x, y = fx.array(x), fx.array(y)
    step, state = train_lm.make_train_step(fx, nn, optim, tiny, steps=12, lr=1e-2, warmup=1)
    losses = []
    for _ in range(12):
        loss = step(x, y)
        fx.eval(loss, state)
        losses.append(loss.item())
    assert np.isfinite(losses).all()
    assert losses[-1] < losses[0] - 1.0, losses


def test_greedy_decode_returns_strings_without_the_newline(tiny):
    prompts = ["1+2=", "10+20=", "3+4=", "999+990="]
    out = train_lm.greedy_decode(fx, tiny, prompts, max_new=3)
    assert len(out) == 4 and all(isinstance(s, str) and len(s) <= 3 for s in out)
    assert all("\n" not in s for s in out)
    # Same prompt, same answer, whichever batch it ran in.
    assert train_lm.greedy_decode(fx, tiny, ["3+4="], max_new=3) == [out[2]]
    assert 0 <= train_lm.exact_matches(fx, tiny, [(1, 2), (3, 4)]) <= 2
