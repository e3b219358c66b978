#!/usr/bin/env python3
"""Sentence-encoder throughput, ferrox against sentence-transformers on
torch (CPU): all-MiniLM-L6-v2, batch 32, the same sentences and the same
number of threads, in one run.

    python3 bench/embed_bench.py                    # 3 rounds, 2 threads
    python3 bench/embed_bench.py --rounds 5 --threads 2 --model DIR

Each round runs the release build of crates/ferrox-cli/examples/embed_bench.rs
(RAYON_NUM_THREADS=threads; it prints one JSON line) and then
sentence-transformers in this process (torch.set_num_threads(threads)),
each doing one untimed pass and --passes timed passes over every
sentence; the round's ratio is ferrox / torch sentences per second (above
1: ferrox is faster). Both sort the sentences by length and cut them into
batches of 32; sentence-transformers pads each batch to its longest text,
ferrox to a length bucket (a multiple of 8 up to 64, of 16 up to 128, ...).
A last run serves the encoder over HTTP in the example's process and
measures --clients concurrent batch-1 clients (default 1 and 8), printing
each count's sentences per second and its ratio to the first count's.

The model directory is --model, else FERROX_MINILM_DIR, else the one
scripts/fetch-minilm.sh installs (it is run if needed). Needs torch and
sentence-transformers.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 32

WORDS = (
    "the river runs past an old mill where children play in summer and nobody"
    " remembers who built it first quantum computers may change cryptography"
    " forever she ordered coffee with oat milk before the meeting started prices"
    " rose sharply after announcement of new tariffs on steel imports a small dog"
    " barked at mailman every morning"
).split()


def sentences(n, seed=7):
    """n sentences of 4 to 40 words, the same every run."""
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 40))) + "."
        for _ in range(n)
    ]


def model_dir(arg):
    if arg:
        return arg
    if os.environ.get("FERROX_MINILM_DIR"):
        return os.environ["FERROX_MINILM_DIR"]
    out = subprocess.run(
        [os.path.join(ROOT, "scripts", "fetch-minilm.sh")],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def build_example():
    env = dict(os.environ)
    subprocess.run(
        ["cargo", "build", "--release", "-p", "ferrox-cli", "--example", "embed_bench"],
        cwd=ROOT,
        check=True,
        env=env,
    )
    target = env.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "release", "examples", "embed_bench")


def run_ferrox(exe, model, path, threads, passes, clients=None):
    """The example's JSON lines: the batch-32 line first, then one per
    client count when ``clients`` (e.g. "1,8") is given."""
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    cmd = [exe, "--model", model, "--sentences", path, "--passes", str(passes)]
    if clients:
        cmd += ["--clients", clients]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return [json.loads(line) for line in out.stdout.strip().splitlines()]


def run_torch(st_model, texts, passes):
    st_model.encode(texts, batch_size=BATCH)
    rates = []
    for _ in range(passes):
        t = time.perf_counter()
        st_model.encode(texts, batch_size=BATCH)
        rates.append(len(texts) / (time.perf_counter() - t))
    return {"sentences_per_s": statistics.mean(rates), "passes_sentences_per_s": rates}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="the model directory (holding model.safetensors)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--passes", type=int, default=3, help="timed passes per round")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--count", type=int, default=512, help="sentences")
    p.add_argument(
        "--clients",
        default="1,8",
        help="concurrent batch-1 HTTP client counts for the server round ('' skips it)",
    )
    args = p.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    model = model_dir(args.model)
    exe = build_example()
    texts = sentences(args.count)
    st_model = SentenceTransformer(model, device="cpu")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(texts))
        path = f.name
    try:
        print(
            f"all-MiniLM-L6-v2, {len(texts)} sentences, batch {BATCH}, "
            f"{args.threads} threads, torch {torch.__version__}"
        )
        ratios = []
        for r in range(args.rounds):
            fx = run_ferrox(exe, model, path, args.threads, args.passes)[0]
            th = run_torch(st_model, texts, args.passes)
            ratio = fx["sentences_per_s"] / th["sentences_per_s"]
            ratios.append(ratio)
            print(
                f"round {r + 1}: ferrox {fx['sentences_per_s']:.1f} sentences/s, "
                f"torch {th['sentences_per_s']:.1f} sentences/s, "
                f"ferrox/torch {ratio:.2f}"
            )
            print(json.dumps({"round": r + 1, "ferrox": fx, "torch": th}), file=sys.stderr)
        print(f"ratio ferrox/torch: median {statistics.median(ratios):.2f}")
        if args.clients:
            for line in run_ferrox(exe, model, path, args.threads, 1, args.clients)[1:]:
                print(
                    f"server, {line['server_clients']} concurrent batch-1 clients: "
                    f"{line['sentences_per_s']:.1f} sentences/s, "
                    f"{line['ratio_to_first']:.2f}x the first count"
                )
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
