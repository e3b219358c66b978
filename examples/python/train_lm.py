#!/usr/bin/env python3
"""Trains a small byte-level language model on generated sums, on ferrox or
on MLX, with the same code.

    python3 examples/python/train_lm.py                    # ferrox, 300 steps
    python3 examples/python/train_lm.py --backend mlx --steps 100

The model is the one the Rust program ``ferrox demo`` trains: a decoder-only
transformer over bytes (vocab 256, dims 256, 4 blocks, 8 query heads sharing
4 key/value heads, SwiGLU feed-forward of 704, RMSNorm, RoPE, output head
tied to the embedding; context 128). The corpus is lines like
``41+86=127`` (operands below 100); one problem in ten (by a hash) is held out
of training and used at the end to count sums the model gets exactly right
by greedy decoding.

The last line printed is JSON: ``{"backend", "tokens_per_s", "final_loss",
"exact", "of"}``: tokens/s over every step after the first (which
compiles; null for a single step), the mean loss of the last 10 steps, and the exact-match count.
Importing this file gives the pieces (``Config``,
``model_class``, ``Corpus``, ``make_train_step``, ``greedy_decode``) to
benchmarks and tests.
"""
import argparse
import importlib
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from functools import partial

import numpy as np


def load_backend(name):
    """``(core, nn, optimizers)`` of ``"ferrox"`` or ``"mlx"``."""
    if name not in ("ferrox", "mlx"):
        raise ValueError(f"unknown backend {name!r} (ferrox or mlx)")
    return tuple(importlib.import_module(f"{name}.{m}") for m in ("core", "nn", "optimizers"))


# The model -------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    """The model's shape; the defaults are ``ferrox demo``'s model."""
    vocab: int = 256
    dims: int = 256
    layers: int = 4
    heads: int = 8
    kv_heads: int = 4
    mlp_dims: int = 704
    context: int = 128
    rope_base: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dims(self):
        return self.dims // self.heads

    @classmethod
    def tiny(cls):
        """A model small enough for tests."""
        return cls(dims=32, layers=2, heads=4, kv_heads=2, mlp_dims=64, context=64)


_CLASSES = {}


def model_class(mx, nn):
    """The language-model class for a backend (``mx`` its core module,
    ``nn`` its nn module); built once per backend, since its layers
    subclass that backend's ``nn.Module``."""
    key = nn.__name__
    if key not in _CLASSES:
        _CLASSES[key] = _define(mx, nn)
    return _CLASSES[key]


def _define(mx, nn):
    class Block(nn.Module):
        """RMSNorm -> grouped-query RoPE attention -> residual, then
        RMSNorm -> SwiGLU -> residual. Attribute names match the Rust
        model's parameter names (``blocks.0.wq.weight``, ...)."""

        def __init__(self, c):
            super().__init__()
            kv = c.kv_heads * c.head_dims
            self.heads, self.kv_heads, self.hd = c.heads, c.kv_heads, c.head_dims
            self.attn_norm = nn.RMSNorm(c.dims, eps=c.norm_eps)
            self.wq = nn.Linear(c.dims, c.dims, bias=False)
            self.wk = nn.Linear(c.dims, kv, bias=False)
            self.wv = nn.Linear(c.dims, kv, bias=False)
            self.wo = nn.Linear(c.dims, c.dims, bias=False)
            self.rope = nn.RoPE(c.head_dims, traditional=False, base=c.rope_base)
            self.mlp_norm = nn.RMSNorm(c.dims, eps=c.norm_eps)
            self.gate = nn.Linear(c.dims, c.mlp_dims, bias=False)
            self.up = nn.Linear(c.dims, c.mlp_dims, bias=False)
            self.down = nn.Linear(c.mlp_dims, c.dims, bias=False)

        def _split(self, x, heads):
            b, t, _ = x.shape
            return x.reshape(b, t, heads, self.hd).transpose(0, 2, 1, 3)

        def __call__(self, x):
            b, t, d = x.shape
            h = self.attn_norm(x)
            q = self.rope(self._split(self.wq(h), self.heads))
            k = self.rope(self._split(self.wk(h), self.kv_heads))
            v = self._split(self.wv(h), self.kv_heads)
            o = mx.fast.scaled_dot_product_attention(
                q, k, v, scale=1.0 / math.sqrt(self.hd), mask="causal")
            x = x + self.wo(o.transpose(0, 2, 1, 3).reshape(b, t, d))
            h = self.mlp_norm(x)
            return x + self.down(nn.silu(self.gate(h)) * self.up(h))

    class LM(nn.Module):
        """Bytes ``(B, T)`` to next-byte logits ``(B, T, vocab)``, causal."""

        def __init__(self, c):
            super().__init__()
            self.config = c
            self.embed = nn.Embedding(c.vocab, c.dims)
            self.blocks = [Block(c) for _ in range(c.layers)]
            self.norm = nn.RMSNorm(c.dims, eps=c.norm_eps)

        def __call__(self, tokens):
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x)
            return self.embed.as_linear(self.norm(x))

    return LM


def parameter_count(model, tree_flatten):
    """Scalars in the model's parameters."""
    return sum(p.size for _, p in tree_flatten(model.parameters()))


# The corpus ------------------------------------------------------------------

OPERAND_LIMIT = 100  # operands are below this: two-digit sums
_MASK = (1 << 64) - 1


def splitmix_first(seed):
    """The first output of SplitMix64 seeded with ``seed`` (as the Rust
    program's ``SplitMix``)."""
    z = (seed + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def held_out(a, b):
    """Whether the problem ``a+b`` is kept out of training: one in ten, by
    a hash (the Rust program's rule), so no digit pattern is missing from
    training."""
    return splitmix_first(a * 1000 + b) % 10 == 0


def problem(a, b):
    """The training line of ``a+b``: ``"a+b=sum\\n"``."""
    return f"{a}+{b}={a + b}\n"


class Corpus:
    """A stream of training lines (held-out problems never among them)
    and batches of windows that start at line starts."""

    def __init__(self, lines=100_000, seed=0):
        rng = random.Random(seed)
        text, starts, at = [], [], 0
        while len(starts) < lines:
            a, b = rng.randrange(OPERAND_LIMIT), rng.randrange(OPERAND_LIMIT)
            if held_out(a, b):
                continue
            line = problem(a, b)
            starts.append(at)
            text.append(line)
            at += len(line)
        self.data = np.frombuffer("".join(text).encode(), dtype=np.uint8).astype(np.int32)
        self.starts = np.array(starts, dtype=np.int64)

    def batch(self, rng, batch, seq):
        """``(inputs, targets)``, both ``(batch, seq)`` int32 numpy arrays:
        ``batch`` windows of ``seq + 1`` bytes from random line starts,
        targets shifted one byte on."""
        usable = self.starts[self.starts + seq + 1 <= len(self.data)]
        picks = usable[rng.integers(0, len(usable), batch)]
        windows = self.data[picks[:, None] + np.arange(seq + 1)]
        return windows[:, :-1], windows[:, 1:]


def held_out_problems(n, seed=0):
    """``n`` distinct held-out problems ``(a, b)``, drawn reproducibly."""
    rng = random.Random(seed + 1)
    found = {}
    n = min(n, OPERAND_LIMIT ** 2 // 20)
    while len(found) < n:
        a, b = rng.randrange(OPERAND_LIMIT), rng.randrange(OPERAND_LIMIT)
        if held_out(a, b):
            found[(a, b)] = None
    return list(found)


# Training --------------------------------------------------------------------

def lr_schedule(optim, lr, steps, warmup=50, end=1e-4):
    """Linear warmup from 0 to ``lr`` over ``warmup`` steps, then a cosine
    decay to ``end`` over the remaining steps."""
    warmup = min(warmup, max(steps - 1, 1))
    return optim.join_schedules(
        [optim.linear_schedule(0.0, lr, warmup),
         optim.cosine_decay(lr, max(steps - warmup, 1), end=end)],
        [warmup])


def make_train_step(mx, nn, optim, model, steps, lr=1e-3, weight_decay=0.01, warmup=50):
    """A compiled training step ``step(inputs, targets) -> loss`` (AdamW on
    the schedule of :func:`lr_schedule`), and the state list it updates
    (evaluate it with the loss)."""
    opt = optim.AdamW(learning_rate=lr_schedule(optim, lr, steps, warmup),
                      weight_decay=weight_decay)
    opt.init(model.trainable_parameters())

    def loss_fn(model, x, y):
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    loss_and_grad = nn.value_and_grad(model, loss_fn)
    state = [model.state, opt.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        opt.update(model, grads)
        return loss

    return step, state


def greedy_decode(mx, model, prompts, max_new=8):
    """Greedy continuations of each prompt (a ``str``) up to ``"\\n"`` or
    ``max_new`` bytes, without the newline. Prompts of one length run as
    one batch; each new byte reruns the model on the grown prompts."""
    out = [None] * len(prompts)
    by_len = {}
    for i, p in enumerate(prompts):
        by_len.setdefault(len(p.encode()), []).append(i)
    for idx in by_len.values():
        rows = [list(prompts[i].encode()) for i in idx]
        done = [False] * len(idx)
        gen = [[] for _ in idx]
        for _ in range(max_new):
            logits = model(mx.array(rows, dtype=mx.int32))[:, -1, :]
            nxt = np.array(mx.argmax(logits, axis=-1)).tolist()
            for j, tok in enumerate(nxt):
                if not done[j]:
                    if tok == ord("\n"):
                        done[j] = True
                    else:
                        gen[j].append(tok)
                rows[j].append(tok)
            if all(done):
                break
        for i, g in zip(idx, gen):
            out[i] = bytes(g).decode("utf-8", errors="replace")
    return out


def exact_matches(mx, model, problems):
    """How many problems ``(a, b)`` greedy decoding from ``"a+b="`` gets
    exactly right."""
    answers = greedy_decode(mx, model, [f"{a}+{b}=" for a, b in problems])
    return sum(ans == str(a + b) for (a, b), ans in zip(problems, answers))


def train(args):
    """Trains as ``args`` say, prints progress, returns the summary dict."""
    mx, nn, optim = load_backend(args.backend)
    tree_flatten = importlib.import_module(f"{args.backend}.utils").tree_flatten
    mx.random.seed(args.seed)
    config = Config()
    model = model_class(mx, nn)(config)
    mx.eval(model.parameters())
    print(f"{args.backend}: {parameter_count(model, tree_flatten):,} parameters; "
          f"batch {args.batch}, seq {args.seq}, {args.steps} steps")
    corpus = Corpus(seed=args.seed)
    rng = np.random.default_rng(args.seed)
    step, state = make_train_step(mx, nn, optim, model, args.steps, lr=args.lr)
    tokens = args.batch * args.seq
    losses, start, mark = [], None, None
    for i in range(1, args.steps + 1):
        x, y = corpus.batch(rng, args.batch, args.seq)
        loss = step(mx.array(x), mx.array(y))
        mx.eval(loss, state)
        losses.append(loss.item())
        now = time.perf_counter()
        if i == 1:  # the first step traces and compiles: not timed
            start = mark = (now, 1)
        if i % args.log_every == 0 or i == args.steps:
            tps = (i - mark[1]) * tokens / (now - mark[0]) if i > mark[1] else float("nan")
            print(f"step {i:5d}  loss {np.mean(losses[-args.log_every:]):.4f}  "
                  f"{tps:,.0f} tokens/s", flush=True)
            mark = (now, i)
    timed = args.steps - start[1]
    tokens_per_s = round(timed * tokens / (now - start[0]), 1) if timed else None
    problems = held_out_problems(args.eval, seed=args.seed)
    exact = exact_matches(mx, model, problems)
    a, b = problems[0]
    print(f"{a}+{b}={greedy_decode(mx, model, [f'{a}+{b}='])[0]}  (true {a + b})")
    print(f"held-out problems answered exactly: {exact} of {len(problems)}")
    return {"backend": args.backend, "tokens_per_s": tokens_per_s,
            "final_loss": round(float(np.mean(losses[-10:])), 4),
            "exact": exact, "of": len(problems)}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=["ferrox", "mlx"], default="ferrox")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--eval", type=int, default=200, help="held-out problems to decode")
    return p.parse_args(argv)


def main(argv=None):
    print(json.dumps(train(parse_args(argv))))


if __name__ == "__main__":
    sys.exit(main())
