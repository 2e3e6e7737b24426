"""Per-operation hashes under this process's numerics mode, to find which kernel a CPU model rounds its own way.

``tests/test_fingerprint.py`` says whether a short ci run gives the same bytes on two CPUs; this script says which
operation differs when something does. Each entry runs one operation family (forward and backward) on seeded
inputs, at the shapes of the kit's tiny model and of issue 39's encoder probe, and hashes its outputs and input
gradients. ``results/numerics_ops.json`` keeps one record per CPU model and mode seen so far; the script compares
this machine's hashes with every stored record of the same mode and lists the operations that differ (exit 1 if
any does); ``--write`` stores this machine's record (docs/stack.md §11 says what the records showed).

    python scripts/numerics_ops.py [--write]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from klear_lib import numerics  # first: the numerics mode before torch loads

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def _digest(tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def _run(fn, *shapes, seed: int = 0) -> str:
    """Hash of ``fn``'s output and of the gradients of its inputs (drawn from ``shapes`` under ``seed``)."""
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn(*s, generator=g).requires_grad_(True) for s in shapes]
    out = fn(*xs)
    out.backward(torch.randn(out.shape, generator=g))
    return _digest([out, *(x.grad for x in xs)])


def _module(make, shape, seed: int = 0) -> str:
    """Hash of a seeded module's output, input gradient and parameter gradients."""
    torch.manual_seed(seed)
    m = make()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed + 1)).requires_grad_(True)
    out = m(x)
    out.backward(torch.ones_like(out))
    return _digest([out, x.grad, *(p.grad for p in m.parameters())])


def _adamw(foreach: bool) -> str:
    torch.manual_seed(0)
    ps = [torch.nn.Parameter(torch.randn(256, 256)) for _ in range(3)]
    opt = torch.optim.AdamW(ps, 1e-3, foreach=foreach)
    for step in range(3):
        for i, p in enumerate(ps):
            p.grad = torch.randn(p.shape, generator=torch.Generator().manual_seed(10 * step + i))
        opt.step()
    return _digest(ps)


def _probe() -> str:
    """Issue 39's probe: 30 AdamW steps of a 4-layer encoder stack (its printed hash)."""
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    m = torch.nn.Sequential(*[torch.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
                              for _ in range(4)], torch.nn.Linear(128, 1000))
    opt = torch.optim.AdamW(m.parameters(), 1e-3)
    x, y = torch.randn(16, 96, 128), torch.randint(0, 1000, (16, 96))
    for _ in range(30):
        loss = F.cross_entropy(m(x).reshape(-1, 1000), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.use_deterministic_algorithms(False)
    return hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in m.parameters())).hexdigest()[:16]


def _rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


OPS = {
    "linear_tiny": lambda: _run(lambda x, w: F.linear(x, w), (8, 64, 256), (1024, 256)),
    "linear_probe": lambda: _run(lambda x, w, b: F.linear(x, w, b), (16, 96, 128), (512, 128), (512,)),
    "linear_vocab": lambda: _run(lambda x, w: F.linear(x, w), (4, 64, 256), (4096, 256)),
    "bmm": lambda: _run(torch.bmm, (64, 96, 32), (64, 32, 96)),
    "sdpa_causal": lambda: _run(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                (4, 4, 64, 64), (4, 4, 64, 64), (4, 4, 64, 64)),
    "sdpa_full": lambda: _run(F.scaled_dot_product_attention, (16, 4, 96, 32), (16, 4, 96, 32), (16, 4, 96, 32)),
    "sdpa_math": lambda: _run(lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) / 8.0, -1) @ v,
                              (16, 4, 96, 32), (16, 4, 96, 32), (16, 4, 96, 32)),
    "layer_norm": lambda: _run(lambda x, w, b: F.layer_norm(x, (128,), w, b), (16, 96, 128), (128,), (128,)),
    "rms_norm": lambda: _run(_rms_norm, (8, 64, 256), (256,)),
    "softmax": lambda: _run(lambda x: torch.softmax(x, -1), (64, 96, 96)),
    "log_softmax": lambda: _run(lambda x: torch.log_softmax(x, -1), (256, 4096)),
    "cross_entropy": lambda: _run(lambda x: F.cross_entropy(x, torch.arange(256) % 1000), (256, 1000)),
    "relu": lambda: _run(F.relu, (16, 96, 512)),
    "gelu": lambda: _run(F.gelu, (16, 96, 512)),
    "silu_mul": lambda: _run(lambda a, b: F.silu(a) * b, (8, 64, 1024), (8, 64, 1024)),
    "exp_log": lambda: _run(lambda x: torch.log1p(torch.exp(x)), (64, 4096)),
    "sum": lambda: _run(lambda x: x.sum(-1), (256, 4096)),
    "mha": lambda: _run(_mha, (16, 96, 128)),
    "encoder_layer": lambda: _module(lambda: torch.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0,
                                                                              batch_first=True), (16, 96, 128)),
    "adamw_foreach": lambda: _adamw(True),
    "adamw_single": lambda: _adamw(False),
    "issue39_probe": _probe,
}


def _mha(x):
    torch.manual_seed(0)
    m = torch.nn.MultiheadAttention(128, 4, batch_first=True)
    return m(x, x, x, need_weights=False)[0]


RECORDS = Path(__file__).resolve().parents[1] / "results" / "numerics_ops.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store this machine's record in " + str(RECORDS.name))
    args = ap.parse_args()
    torch.set_num_threads(numerics.THREADS)
    record = {**numerics.provenance(), "ops": {name: op() for name, op in OPS.items()}}
    print(json.dumps(record, indent=1))
    stored = json.loads(RECORDS.read_text()) if RECORDS.exists() else {}
    key = numerics.record_key(record)
    differs = False
    for other_key, other in stored.items():
        if other_key == key or other["numerics"] != record["numerics"]:
            continue
        differ = [k for k in OPS if other["ops"].get(k) != record["ops"][k]]
        differs |= bool(differ)
        print(f"{len(differ)} of {len(OPS)} operations differ from {other_key}: {', '.join(differ) or 'none'}",
              file=sys.stderr)
    if args.write:
        RECORDS.write_text(json.dumps({**stored, key: record}, indent=1) + "\n")
    sys.exit(1 if differs else 0)


if __name__ == "__main__":
    main()
