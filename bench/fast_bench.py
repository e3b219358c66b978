#!/usr/bin/env python3
"""ferrox.core.fast against torch and mlx (CPU), in one process, same run.

    python3 bench/fast_bench.py            # every case
    python3 bench/fast_bench.py --repeat 9

Cases (issue 14's targets):
  attention   B=1, 8 heads, D=64, T=1024, causal, float32: forward, and
              forward + backward (gradients of q, k, v)
  decode      one query against a 2048-long KV cache, 32 query heads,
              8 key/value heads (GQA)
  rms_norm / layer_norm over (4096, 4096) float32, against one read and
              one write of the same bytes (numpy copyto) at the measured
              memory bandwidth

Each time is the median of --repeat runs after two warm-up runs. Ratios are
ferrox's time over the competitor's (below 1: ferrox is faster). Missing
libraries are skipped.
"""
import argparse
import statistics
import time

import numpy as np

try:
    import ferrox.core as fx
except ImportError:  # pragma: no cover
    fx = None
try:
    import mlx.core as mx
except ImportError:
    mx = None
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None


def timed(fn, repeat):
    for _ in range(2):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def attention_case(rng, b, hq, hkv, tq, tk, d, causal):
    q = rng.standard_normal((b, hq, tq, d)).astype(np.float32)
    k = rng.standard_normal((b, hkv, tk, d)).astype(np.float32)
    v = rng.standard_normal((b, hkv, tk, d)).astype(np.float32)
    return q, k, v, d ** -0.5, "causal" if causal else None


def bench_attention(args, case, backward):
    q, k, v, scale, mask = case
    out = {}
    if fx is not None:
        fq, fk, fv = fx.array(q), fx.array(k), fx.array(v)
        if backward:
            g = fx.grad(lambda a, b_, c: fx.fast.scaled_dot_product_attention(a, b_, c, scale=scale, mask=mask).sum(), argnums=(0, 1, 2))
            out["ferrox"] = timed(lambda: fx.eval(g(fq, fk, fv)), args.repeat)
        else:
            out["ferrox"] = timed(lambda: fx.eval(fx.fast.scaled_dot_product_attention(fq, fk, fv, scale=scale, mask=mask)), args.repeat)
    if torch is not None:
        tq_, tk_, tv_ = (torch.from_numpy(a) for a in (q, k, v))
        gqa = q.shape[1] != k.shape[1]
        causal = mask == "causal"

        def t_fwd():
            with torch.no_grad():
                F.scaled_dot_product_attention(tq_, tk_, tv_, is_causal=causal, scale=scale, enable_gqa=gqa)

        def t_bwd():
            a, b_, c = (x.detach().requires_grad_() for x in (tq_, tk_, tv_))
            F.scaled_dot_product_attention(a, b_, c, is_causal=causal, scale=scale, enable_gqa=gqa).sum().backward()

        out["torch"] = timed(t_bwd if backward else t_fwd, args.repeat)
    if mx is not None:
        mq, mk, mv = mx.array(q), mx.array(k), mx.array(v)
        if backward:
            g = mx.grad(lambda a, b_, c: mx.fast.scaled_dot_product_attention(a, b_, c, scale=scale, mask=mask).sum(), argnums=(0, 1, 2))
            out["mlx"] = timed(lambda: mx.eval(g(mq, mk, mv)), args.repeat)
        else:
            out["mlx"] = timed(lambda: mx.eval(mx.fast.scaled_dot_product_attention(mq, mk, mv, scale=scale, mask=mask)), args.repeat)
    return out


def bench_norm(args, kind, n=4096):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    dst = np.empty_like(x)
    out = {"read+write": timed(lambda: np.copyto(dst, x), args.repeat)}
    if fx is not None:
        fxx, fw, fb = fx.array(x), fx.array(w), fx.array(b)
        fx.eval(fxx)
        if kind == "rms_norm":
            out["ferrox"] = timed(lambda: fx.eval(fx.fast.rms_norm(fxx, fw, 1e-5)), args.repeat)
        else:
            out["ferrox"] = timed(lambda: fx.eval(fx.fast.layer_norm(fxx, fw, fb, 1e-5)), args.repeat)
    if torch is not None:
        tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
        with torch.no_grad():
            if kind == "rms_norm" and hasattr(F, "rms_norm"):
                out["torch"] = timed(lambda: F.rms_norm(tx, (n,), tw, 1e-5), args.repeat)
            elif kind == "layer_norm":
                out["torch"] = timed(lambda: F.layer_norm(tx, (n,), tw, tb, 1e-5), args.repeat)
    if mx is not None:
        mxx, mw, mb = mx.array(x), mx.array(w), mx.array(b)
        mx.eval(mxx)
        if kind == "rms_norm":
            out["mlx"] = timed(lambda: mx.eval(mx.fast.rms_norm(mxx, mw, 1e-5)), args.repeat)
        else:
            out["mlx"] = timed(lambda: mx.eval(mx.fast.layer_norm(mxx, mw, mb, 1e-5)), args.repeat)
    return out


def report(name, times, base="ferrox"):
    cells = "  ".join(f"{k} {v:8.2f} ms" for k, v in times.items())
    ratios = "  ".join(f"ferrox/{k} {times[base] / v:5.2f}" for k, v in times.items() if k != base and base in times)
    print(f"{name:34s} {cells}   {ratios}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = p.parse_args()
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    print("libraries:", ", ".join(n for n, m in (("ferrox", fx), ("torch", torch), ("mlx", mx)) if m is not None))
    rng = np.random.default_rng(0)
    long = attention_case(rng, 1, 8, 8, 1024, 1024, 64, True)
    report("attention T=1024 causal fwd", bench_attention(args, long, False))
    report("attention T=1024 causal fwd+bwd", bench_attention(args, long, True))
    decode = attention_case(rng, 1, 32, 8, 1, 2048, 64, False)
    report("decode 1x2048, 32/8 heads", bench_attention(args, decode, False))
    for kind in ("rms_norm", "layer_norm"):
        report(f"{kind} 4096x4096", bench_norm(args, kind))


if __name__ == "__main__":
    main()
