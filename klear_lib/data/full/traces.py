"""Teacher traces for long-CoT SFT (docs/paper.md §2.2): ``python -m klear_lib.data.full.traces``.

    python -m klear_lib.data.full.traces --prompts DIR/sft_prompts.jsonl --out DIR/sft_traces.jsonl
        [--preset full] [--teacher NAME|HUB_ID|FOLDER] [--max-prompts N] [--shard I/N] [--set KEY=VALUE ...]
        [--dry-run]

Reads the prompts ``klear_lib.data.full.build`` writes, renders each with the teacher's chat template and samples
``responses_per_prompt`` responses from it (``configs/traces.py``; at ``full`` DeepSeek-R1-0528, 16 each) through the
kit's generation path (``klear_lib.generation``: vLLM in a child process, or transformers). Writes SFT
rows with a ``messages`` column, the ``TRAIN_FILE`` of ``scripts/launch_sft_full.sh``, no correctness filter (the
paper keeps every response, docs/paper.md §2.2), and ``<out>.manifest.json`` with the config and the counts.

Prompts go in fixed chunks of ``chunk_prompts``, each one generation call seeded by (seed, teacher, chunk) and
appended in one write; a rerun skips finished chunks and generates an unfinished one again whole, as the
evaluation harness does. ``--shard I/N`` takes chunks I, I+N, ... into ``<out>.shard-I-of-N.jsonl``, so N nodes
share the prompts. ``--dry-run`` prints the config, the vLLM engine and sampling arguments of the first call, the
chunks, and the output, and generates nothing.
"""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from tqdm.auto import tqdm
from transformers import AutoTokenizer

from klear_lib.configs import Recipe, config_hash, recipe, to_dict
from klear_lib.configs.base import parse_overrides
from klear_lib.generation import append_samples, chat_prompts, fixed_chunks, generate, prefill_of, rewrite_samples
from klear_lib.generation.vllm_worker import engine_kwargs, sampling_kwargs
from klear_lib.models import load_or_build
from klear_lib.seeding import stable_seed

log = logging.getLogger(__name__)
# Teachers by name: the paper's SFT teacher, and the other two of its Table 3 (docs/paper.md §3 Table 3).
TEACHERS = {"deepseek-r1-0528": "deepseek-ai/DeepSeek-R1-0528", "deepseek-r1-0120": "deepseek-ai/DeepSeek-R1",
            "qwq-32b": "Qwen/QwQ-32B"}


def read_prompts(path: Path, limit: int | None = None) -> list[dict]:
    """Prompt rows (``prompt[0].content``, ``ability``, ``extra_info.id``); a line that is not one raises naming
    the file, the line and the field."""
    rows = []
    for k, line in enumerate(Path(path).read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: line {k}: invalid JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}: line {k}: a JSON object expected, not a {type(row).__name__}")
        turns = row.get("prompt")
        has_prompt = isinstance(turns, list) and bool(turns) and isinstance(turns[0], dict) and bool(
            turns[0].get("content"))
        has_id = isinstance(row.get("extra_info"), dict) and bool(row["extra_info"].get("id"))
        for field, ok in (("prompt", has_prompt), ("extra_info.id", has_id)):
            if not ok:
                raise ValueError(f"{path}: line {k}: field {field!r}: missing or empty")
        rows.append(row)
        if limit and len(rows) == limit:
            break
    return rows


def shard_of(text: str | None) -> tuple[int, int]:
    """``"I/N"`` as ``(I, N)`` with 0 <= I < N; None is the whole set, ``(0, 1)``."""
    if not text:
        return 0, 1
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected I/N, e.g. 0/4") from None
    if not 0 <= i < n:
        raise ValueError(f"--shard {text}: need 0 <= I < N")
    return i, n


def sft_rows(rows: list[dict], prompts: list[str], outs: list[list[str]], teacher: str) -> list[dict]:
    """SFT rows (``messages`` = [user, assistant]) of one chunk's responses; a prefilled ``<think>`` is kept."""
    return [{"messages": [{"role": "user", "content": row["prompt"][0]["content"]},
                          {"role": "assistant", "content": prefill_of(prompt) + text}],
             "id": f"{row['extra_info']['id']}-s{j}", "item_id": row["extra_info"]["id"], "sample": j,
             "ability": row.get("ability"), "data_source": row.get("data_source"), "teacher": teacher}
            for row, prompt, texts in zip(rows, prompts, outs) for j, text in enumerate(texts)]


def stored(path: Path) -> list[dict]:
    """The rows already written (a torn last line, from a run killed mid-write, is left out)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            log.warning("%s: an unparsable line is dropped; its chunk is generated again", path)
    return out


def todo_chunks(rows: list[dict], cfg, shard: tuple[int, int], done: list[dict]) -> tuple[list[range], list[int]]:
    """All fixed chunks, and those of this shard with any response missing."""
    chunks = fixed_chunks(len(rows), cfg.chunk_prompts)
    have = {(r.get("item_id"), r.get("sample")) for r in done}
    mine = [c for c in range(len(chunks)) if c % shard[1] == shard[0]]
    return chunks, [c for c in mine if any((rows[i]["extra_info"]["id"], j) not in have for i in chunks[c]
                                           for j in range(cfg.responses_per_prompt))]


def options(cfg) -> dict:
    """The arguments of every generation call but the model, the prompts and the seed."""
    return {"n": cfg.responses_per_prompt, "temperature": cfg.temperature, "top_p": cfg.top_p,
            "max_new_tokens": cfg.max_new_tokens, "backend": cfg.backend, "max_model_len": cfg.max_model_len,
            "dtype": cfg.dtype, "revision": cfg.teacher_revision, "tensor_parallel_size": cfg.tensor_parallel_size}


def teacher_label(recipe: Recipe) -> str:
    """The teacher's name in rows and seeds: the configured one, or ``<preset> base model``."""
    return recipe.traces.teacher or f"{recipe.preset} base model"


def sample(rows: list[dict], recipe: Recipe, path: Path, shard=(0, 1), generate_fn=generate) -> Path:
    """Generate every missing response of this shard into ``path`` (config ``recipe.traces``); returns it."""
    cfg, label, done = recipe.traces, teacher_label(recipe), stored(path)
    # a TEACHERS name, a hub id or folder, or the recipe's base model when unset
    teacher = TEACHERS.get(cfg.teacher, cfg.teacher) if cfg.teacher else load_or_build(recipe)
    chunks, todo = todo_chunks(rows, cfg, shard, done)
    if not todo:
        return path
    stale = {rows[i]["extra_info"]["id"] for c in todo for i in chunks[c]}
    rewrite_samples(path, [r for r in done if r.get("item_id") not in stale])
    prompts = chat_prompts(AutoTokenizer.from_pretrained(teacher, revision=cfg.teacher_revision), rows)
    for c in tqdm(todo, desc=f"traces {Path(teacher).name}", unit="chunk"):
        idx = list(chunks[c])
        outs = generate_fn(teacher, [prompts[i] for i in idx], seed=stable_seed(cfg.seed, "traces", label, c),
                           **options(cfg))
        append_samples(path, sft_rows([rows[i] for i in idx], [prompts[i] for i in idx], outs, label))
    return path


def summary(traces: list[dict], recipe: Recipe) -> dict:
    """The manifest: config and hash, and per ability the prompts, responses, mean length and the share of
    responses that never close ``</think>`` (cut by max_new_tokens, or a teacher that does not think)."""
    by: dict[str, list[dict]] = {}
    for r in traces:
        by.setdefault(r["ability"] or "unknown", []).append(r)
    counts = {}
    for ability, rows in sorted(by.items()):
        texts = [r["messages"][1]["content"] for r in rows]
        counts[ability] = {"prompts": len({r["item_id"] for r in rows}), "responses": len(texts),
                           "mean_chars": round(sum(map(len, texts)) / len(texts), 1),
                           "share_without_close_think": round(sum("</think>" not in t for t in texts) / len(texts), 4)}
    cfg = recipe.traces
    return {"preset": recipe.preset, "config": to_dict(cfg), "config_hash": config_hash(cfg), "counts": counts}


def dry_run(rows: list[dict], recipe: Recipe, path: Path, shard) -> str:
    """What a run would do: config, the first call's engine arguments, the chunks of this shard, the output."""
    cfg, preset = recipe.traces, recipe.preset
    teacher = TEACHERS.get(cfg.teacher, cfg.teacher) if cfg.teacher else f"the {preset} base model (built if missing)"
    chunks, todo = todo_chunks(rows, cfg, shard, stored(path))
    request = {"model": teacher, **options(cfg),
               "seed": stable_seed(cfg.seed, "traces", teacher_label(recipe), todo[0] if todo else 0)}
    engine = ([f"vLLM LLM(...) on GPU: {json.dumps(engine_kwargs(request, on_cpu=False), sort_keys=True)}",
               f"vLLM SamplingParams(...): {json.dumps(sampling_kwargs(request), sort_keys=True)}"]
              if cfg.backend == "vllm" else [f"transformers generate: {json.dumps(request, sort_keys=True)}"])
    n_todo = sum(len(chunks[c]) for c in todo)
    return "\n".join([
        f"traces config {config_hash(cfg)} ({preset}): {json.dumps(to_dict(cfg), sort_keys=True)}",
        f"teacher: {teacher}@{cfg.teacher_revision or 'default'} via {cfg.backend}", *engine,
        f"prompts: {len(rows)} in {len(chunks)} chunks of {cfg.chunk_prompts}; shard {shard[0]}/{shard[1]}: "
        f"{len(todo)} chunks to generate ({n_todo} prompts x {cfg.responses_per_prompt} responses)",
        f"writes: {path} and {path.with_suffix('.manifest.json')}"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m klear_lib.data.full.traces", description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", required=True, help="sft_prompts.jsonl from klear_lib.data.full.build")
    parser.add_argument("--out", required=True, help="SFT rows to write (.jsonl)")
    parser.add_argument("--preset", default="full", help="ci | tiny | full (configs/traces.py)")
    parser.add_argument("--teacher", help=f"a name ({', '.join(TEACHERS)}), a hub id or a folder")
    parser.add_argument("--max-prompts", type=int, help="only the first N prompts")
    parser.add_argument("--shard", help="I/N: this node's share of the chunks")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="TracesConfig fields")
    parser.add_argument("--dry-run", action="store_true", help="print what would run, generate nothing")
    args = parser.parse_args(argv)
    try:
        overrides = {**parse_overrides(args.set), **({"teacher": args.teacher} if args.teacher else {})}
        run, shard = recipe(args.preset, traces=overrides), shard_of(args.shard)
        rows = read_prompts(Path(args.prompts), args.max_prompts)
    except (KeyError, ValueError, FileNotFoundError) as err:
        parser.exit(2, f"{parser.prog}: {err}\n")
    path, (i, n) = Path(args.out), shard
    path = path if n == 1 else path.with_name(f"{path.stem}.shard-{i}-of-{n}{path.suffix}")
    if args.dry_run:
        return print(dry_run(rows, run, path, shard))
    sample(rows, run, path, shard)
    info = summary(stored(path), run)
    path.with_suffix(".manifest.json").write_text(json.dumps(info, indent=1, sort_keys=True))
    print(json.dumps(info["counts"], sort_keys=True))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
