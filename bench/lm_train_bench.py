#!/usr/bin/env python3
"""Training throughput (tokens/s) of the demo language model, ferrox against
MLX (CPU), PyTorch eager and torch.compile, in one run.

    python3 bench/lm_train_bench.py
    python3 bench/lm_train_bench.py --steps 10 --ferrox-bin target/release/ferrox

The model and batch are examples/python/train_lm.py's (about 3.0M
parameters: vocab 256, dims 256, 4 blocks, 8 query / 4 key-value heads,
SwiGLU 704, RoPE, tied head; batch 16 x 128 bytes). ferrox and MLX run that
file's own model and compiled AdamW step; PyTorch runs the same architecture
written here (rotate-half RoPE, ``F.scaled_dot_product_attention`` with
``is_causal`` and ``enable_gqa``), eager and with ``torch.compile(model)``,
with the foreach AdamW.

Every framework trains on the same pre-made batches: ``--warmup`` steps,
then ``--steps`` timed steps, ``--repeat`` times; the table shows each
repetition's tokens/s, their median, and "ferrox/them" = ferrox's median /
theirs (above 1: ferrox is faster). With ``--ferrox-bin``, the Rust program
is also run (``PATH train --steps N --batch 16 --seq 128 --summary-json FILE
--quiet``) and its reported ``tokens_per_s`` joins the table. Frameworks
that are not installed, or fail to build, are reported and skipped;
``--only`` picks some by name. Run it on an otherwise idle machine: a
framework that spreads a step over every core (torch, MLX) loses most when
another process holds one.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
import train_lm  # noqa: E402  (the model and step under test)


def batches(n, batch, seq, seed=0):
    """``n`` training batches ``(inputs, targets)`` as numpy int32 arrays."""
    corpus = train_lm.Corpus(lines=20_000, seed=seed)
    rng = np.random.default_rng(seed)
    return [corpus.batch(rng, batch, seq) for _ in range(n)]


# ferrox and MLX: train_lm.py's own code -------------------------------------

def mlx_like_runner(backend, data):
    """``run(count)`` doing ``count`` training steps on ``data``'s batches, for
    ``"ferrox"`` or ``"mlx"``."""
    mx, nn, optim = train_lm.load_backend(backend)
    mx.random.seed(0)
    model = train_lm.model_class(mx, nn)(train_lm.Config())
    mx.eval(model.parameters())
    step, state = train_lm.make_train_step(mx, nn, optim, model, steps=1000)
    arrays = [(mx.array(x), mx.array(y)) for x, y in data]

    def run(count):
        for i in range(count):
            loss = step(*arrays[i % len(arrays)])
            mx.eval(loss, state)
        return loss.item()

    return run


# PyTorch: the same architecture, written for torch ---------------------------

def torch_model(torch, c):
    """The language model of ``train_lm.Config`` ``c`` as a torch module."""
    nn, F = torch.nn, torch.nn.functional

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            kv = c.kv_heads * c.head_dims
            self.attn_norm = nn.RMSNorm(c.dims, eps=c.norm_eps)
            self.wq = nn.Linear(c.dims, c.dims, bias=False)
            self.wk = nn.Linear(c.dims, kv, bias=False)
            self.wv = nn.Linear(c.dims, kv, bias=False)
            self.wo = nn.Linear(c.dims, c.dims, bias=False)
            self.mlp_norm = nn.RMSNorm(c.dims, eps=c.norm_eps)
            self.gate = nn.Linear(c.dims, c.mlp_dims, bias=False)
            self.up = nn.Linear(c.dims, c.mlp_dims, bias=False)
            self.down = nn.Linear(c.mlp_dims, c.dims, bias=False)

        def forward(self, x, cos, sin):
            b, t, d = x.shape
            h = self.attn_norm(x)

            def heads(z, n):
                return z.view(b, t, n, c.head_dims).transpose(1, 2)

            q, k = heads(self.wq(h), c.heads), heads(self.wk(h), c.kv_heads)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            o = F.scaled_dot_product_attention(
                q, k, heads(self.wv(h), c.kv_heads), is_causal=True,
                scale=1 / math.sqrt(c.head_dims), enable_gqa=True)
            x = x + self.wo(o.transpose(1, 2).reshape(b, t, d))
            h = self.mlp_norm(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(c.vocab, c.dims)
            self.blocks = nn.ModuleList(Block() for _ in range(c.layers))
            self.norm = nn.RMSNorm(c.dims, eps=c.norm_eps)
            half = torch.arange(0, c.head_dims, 2, dtype=torch.float32) / c.head_dims
            angles = torch.arange(c.context, dtype=torch.float32)[:, None] * c.rope_base ** -half
            angles = torch.cat((angles, angles), dim=-1)
            self.register_buffer("cos", angles.cos(), persistent=False)
            self.register_buffer("sin", angles.sin(), persistent=False)

        def forward(self, tokens):
            t = tokens.shape[1]
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x, self.cos[:t], self.sin[:t])
            return self.norm(x) @ self.embed.weight.T

    return LM()


def torch_runner(compiled, data):
    """``run(count)`` doing ``count`` torch training steps on ``data``'s
    batches."""
    import torch
    torch.manual_seed(0)
    model = torch_model(torch, train_lm.Config())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=True)
    forward = torch.compile(model) if compiled else model
    tensors = [(torch.from_numpy(x).long(), torch.from_numpy(y).long()) for x, y in data]

    def run(count):
        for i in range(count):
            x, y = tensors[i % len(tensors)]
            opt.zero_grad(set_to_none=True)
            logits = forward(x)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
            loss.backward()
            opt.step()
        return loss.item()

    return run


# The Rust program -------------------------------------------------------------

def rust_tokens_per_s(binary, steps, batch, seq):
    """The ``tokens_per_s`` the Rust ``ferrox train`` reports, or None
    (with the reason printed) when it cannot be had."""
    binary = os.path.abspath(binary)  # it runs in a temporary directory
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"  ferrox (Rust): {binary} is not an executable file; skipped")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        cmd = [binary, "train", "--steps", str(steps), "--batch", str(batch),
               "--seq", str(seq), "--summary-json", summary, "--quiet"]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
            print(f"  ferrox (Rust): `{' '.join(cmd[1:])}` failed "
                  f"(exit {done.returncode}: {why[0]}); skipped")
            return None
        if not os.path.exists(summary):
            print(f"  ferrox (Rust): `{' '.join(cmd[1:])}` wrote no summary (does this build "
                  "have `train --summary-json`?); skipped")
            return None
        with open(summary) as f:
            value = json.load(f).get("tokens_per_s")
    if not isinstance(value, (int, float)):
        print("  ferrox (Rust): the summary has no numeric tokens_per_s; skipped")
    return value if isinstance(value, (int, float)) else None


# Driver -----------------------------------------------------------------------

def runners():
    """``(name, make)`` for each framework that imports here; ``make(data)``
    builds the model and returns its ``run(count)``."""
    out = []
    for name, module in (("ferrox", "ferrox.core"), ("mlx", "mlx.core")):
        try:
            __import__(module)
        except ImportError as e:
            if name == "ferrox":
                sys.exit(f"ferrox is not importable ({e}): nothing to compare")
            print(f"  {name}: not importable ({e}); skipped")
            continue
        out.append((name, lambda data, n=name: mlx_like_runner(n, data)))
    try:
        import torch  # noqa: F401
        out.append(("torch eager", lambda data: torch_runner(False, data)))
        out.append(("torch.compile", lambda data: torch_runner(True, data)))
    except ImportError:
        print("  torch: not installed; skipped")
    return out


def measure(make, data, warmup, steps, repeat):
    """Tokens/s of each of ``repeat`` timed runs of ``steps`` steps, after
    ``warmup`` untimed ones."""
    run = make(data)
    run(warmup)
    tokens = steps * data[0][0].size
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run(steps)
        out.append(tokens / (time.perf_counter() - t0))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=5, help="timed steps per repetition")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--ferrox-bin", help="the Rust `ferrox` program, to run its `train`")
    ap.add_argument("--only", help="comma-separated frameworks to run, e.g. 'ferrox,torch eager'")
    args = ap.parse_args()
    data = batches(args.steps, args.batch, args.seq)
    results = {}
    only = set(args.only.split(",")) if args.only else None
    for name, make in runners():
        if only is not None and name not in only:
            continue
        print(f"  {name} ...", flush=True)
        try:
            results[name] = measure(make, data, args.warmup, args.steps, args.repeat)
        except Exception as e:  # a competitor that does not build here
            print(f"  {name}: failed: {type(e).__name__}: {e}".splitlines()[0])
    if args.ferrox_bin:
        runs = []
        for _ in range(args.repeat):
            r = rust_tokens_per_s(args.ferrox_bin, args.warmup + args.steps, args.batch, args.seq)
            if r is None:
                break
            runs.append(r)
        else:
            results["ferrox (Rust)"] = runs
    print(f"\ntraining tokens/s, batch {args.batch} x {args.seq}: {args.warmup} warm-up steps, "
          f"then {args.repeat} x {args.steps} timed steps")
    base = statistics.median(results["ferrox"]) if "ferrox" in results else None
    print(f"  {'':14s}" + "".join(f" {f'run {i + 1}':>9s}" for i in range(args.repeat))
          + f" {'median':>9s} {'ferrox/them':>12s}")
    medians = {}
    for name, runs in results.items():
        medians[name] = med = statistics.median(runs)
        ratio = "" if name == "ferrox" or base is None else f"{base / med:11.2f}x"
        print(f"  {name:14s}" + "".join(f" {r:9.0f}" for r in runs) + f" {med:9.0f} {ratio:>12s}")
    print(json.dumps({"tokens_per_s": {k: round(v, 1) for k, v in medians.items()}}))


if __name__ == "__main__":
    main()
