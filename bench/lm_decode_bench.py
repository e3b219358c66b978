#!/usr/bin/env python3
"""Decode speed of one client (tokens/s, greedy, batch 1, key/value cache)
of the demo language model: the Rust ``ferrox generate`` against PyTorch
eager on the same weights, in one run.

    python3 bench/lm_decode_bench.py --ferrox-bin target/release/ferrox
    python3 bench/lm_decode_bench.py --ferrox-bin target/release/ferrox --checkpoint ferrox-demo/model.safetensors

Without ``--checkpoint`` a checkpoint is made with ``ferrox train --steps
2`` (decode speed does not depend on the weights' values). Both sides
prefill the same prompt and generate ``--tokens`` tokens; decode tokens/s
counts the tokens after the first over the time after the first. ferrox
reports its last of ``--repeat`` runs (the first traces); PyTorch runs
``--repeat`` times after a warm-up and reports the median. Both use the
same number of threads (``--threads``, default 2). "ferrox/torch" above 1
means ferrox is faster.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lm_train_bench  # noqa: E402  (the torch model mirroring ferrox's)
import train_lm  # noqa: E402  (on sys.path through lm_train_bench)

PROMPT = "41+86="


def ferrox_decode(binary, checkpoint, tokens, repeat):
    """``ferrox generate``'s statistics (a dict) for the last of ``repeat`` runs."""
    cmd = [binary, "generate", "--model", checkpoint, "--prompt", PROMPT,
           "--max-tokens", str(tokens), "--repeat", str(max(repeat, 2))]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stderr.strip().splitlines()[-1])


def torch_weights(torch, checkpoint):
    """The checkpoint's ``model.*`` tensors, named as the torch model names them."""
    from safetensors.torch import load_file
    return {k[len("model."):]: v for k, v in load_file(checkpoint).items() if k.startswith("model.")}


def torch_decode(checkpoint, tokens, repeat, threads):
    """Median decode tokens/s of a KV-cache greedy loop in PyTorch eager."""
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    c = train_lm.Config()
    model = lm_train_bench.torch_model(torch, c)
    missing, unexpected = model.load_state_dict(torch_weights(torch, checkpoint), strict=False)
    assert not unexpected and all(m in ("cos", "sin") for m in missing), (missing, unexpected)
    model.eval()
    hd = c.head_dims

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    def block_step(block, x, pos, cache):
        b, t, d = x.shape
        h = block.attn_norm(x)
        heads = lambda z, n: z.view(b, t, n, hd).transpose(1, 2)  # noqa: E731
        cos, sin = model.cos[pos:pos + t], model.sin[pos:pos + t]
        q, k = heads(block.wq(h), c.heads), heads(block.wk(h), c.kv_heads)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        v = heads(block.wv(h), c.kv_heads)
        cache["k"][:, :, pos:pos + t] = k
        cache["v"][:, :, pos:pos + t] = v
        keys, values = cache["k"][:, :, :pos + t], cache["v"][:, :, :pos + t]
        o = F.scaled_dot_product_attention(q, keys, values, is_causal=t > 1,
                                           scale=1 / math.sqrt(hd), enable_gqa=True)
        x = x + block.wo(o.transpose(1, 2).reshape(b, t, d))
        h = block.mlp_norm(x)
        return x + block.down(F.silu(block.gate(h)) * block.up(h))

    def generate():
        caches = [{"k": torch.zeros(1, c.kv_heads, c.context, hd),
                   "v": torch.zeros(1, c.kv_heads, c.context, hd)} for _ in model.blocks]
        ids = torch.tensor([list(PROMPT.encode())])
        pos, out = 0, []
        start = first = None
        start = time.perf_counter()
        while len(out) < tokens:
            x = model.embed(ids)
            for block, cache in zip(model.blocks, caches):
                x = block_step(block, x, pos, cache)
            logits = model.norm(x[:, -1]) @ model.embed.weight.T
            pos += ids.shape[1]
            nxt = int(logits.argmax(-1))
            out.append(nxt)
            if first is None:
                first = time.perf_counter()
            ids = torch.tensor([[nxt]])
        end = time.perf_counter()
        return (len(out) - 1) / (end - first), (first - start) * 1e3

    with torch.inference_mode():
        generate()
        runs = [generate() for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ferrox-bin", required=True)
    p.add_argument("--checkpoint")
    p.add_argument("--tokens", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    if len(PROMPT) + a.tokens > train_lm.Config().context:
        sys.exit(f"--tokens {a.tokens} does not fit the context")
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = a.checkpoint
        if ckpt is None:
            subprocess.run([a.ferrox_bin, "train", "--steps", "2", "--quiet", "--out", tmp],
                           check=True, capture_output=True)
            ckpt = os.path.join(tmp, "model.safetensors")
        print(f"decode, batch 1, {a.tokens} tokens, {a.threads} threads, checkpoint {ckpt}")
        rows = []
        for r in range(a.repeat):
            fx = ferrox_decode(a.ferrox_bin, ckpt, a.tokens, 3)
            rows.append(fx["decode_tokens_per_s"])
            print(f"  ferrox run {r + 1}: {fx['decode_tokens_per_s']:.0f} tokens/s, "
                  f"first token {fx['time_to_first_token_ms']:.1f} ms, traces {fx['traces']}")
        ferrox_tps = statistics.median(rows)
        try:
            torch_tps, torch_ttft = torch_decode(ckpt, a.tokens, a.repeat, a.threads)
        except ImportError as e:
            print(f"  PyTorch: not installed ({e}); skipped")
            return
        print(f"  PyTorch eager: {torch_tps:.0f} tokens/s, first token {torch_ttft:.1f} ms")
        print(f"| decode tokens/s | ferrox {ferrox_tps:.0f} | torch {torch_tps:.0f} | "
              f"ferrox/torch {ferrox_tps / torch_tps:.2f} |")


if __name__ == "__main__":
    main()
