"""The training files of the full recipe from the released sets: ``python -m klear_lib.data.full.build``.

    python -m klear_lib.data.full.build --out DIR [--source hub|mirror] [--parts rl sft] [--dry-run]

* ``rl`` — ``DIR/math_rl.parquet`` and ``DIR/code_rl.parquet``, the RL stages' ``TRAIN_FILE``
  (``scripts/launch_rl_full.sh``): the released Klear subsets at their pinned revisions (``--source hub``), or the
  DeepScaleR and rLLM files of an offline mirror (``--source mirror``, ``$KLEAR_BENCHMARKS``), curated by
  ``realworld.build_real_world``: validate, exact dedup, 9-gram decontamination against every benchmark, >= 16
  tests for code. The teacher filters need DeepSeek-R1 samples and are not run (docs/paper.md §2.3).
* ``sft`` — ``DIR/sft_prompts.jsonl``: the SFT prompt sources of the registry (docs/paper.md §2.2), validated,
  deduplicated across sources and decontaminated by the same filters; hub only (they have no mirror layout). The
  responses come from a teacher (``python -m klear_lib.data.full.traces``); the paper's 1.5M-row SFT set is not
  released (docs/paper.md §6).

Every run writes ``DIR/funnel.csv`` (each step's rows in and out and drops by reason), ``DIR/manifest.json`` (the
data config and its hash, where each source loaded from at which pin, each file's rows and sha256) and the data
card ``README.md`` in DIR (``klear_lib.data.full.card``; a Hugging Face dataset card is its README). ``--dry-run``
prints the sources, where each would load from, the filters and the files, and loads nothing. A source that
cannot be loaded stops the build naming it.
"""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from datasets import Dataset

from klear_lib import artifacts
from klear_lib.configs import config_hash, get_config, to_dict
from klear_lib.configs.base import parse_overrides
from klear_lib.data import curation as cu
from klear_lib.data.fetch import SourceUnavailable, locate, sha256_file
from klear_lib.data.full import card
from klear_lib.data.realworld import LOAD_MODE, TRAIN, _benchmarks, _train_split, benchmark_index, build_real_world
from klear_lib.data.schema import dumps_rows
from klear_lib.data.sources import BENCHMARKS, SOURCES
from klear_lib.data.store import funnel_csv

log = logging.getLogger(__name__)
PARTS = ("rl", "sft")
SFT_SOURCES = tuple(n for n, s in SOURCES.items() if s.kind == "sft_prompts")
FILES = {"math_rl": "math_rl.parquet", "code_rl": "code_rl.parquet", "sft_prompts": "sft_prompts.jsonl"}
NOT_RUN_SFT = ("not run: Qwen3-8B difficulty labels, the source ranking and K-Center selection down to the paper's "
               "1.5M rows, and the teacher's 16 responses per prompt (docs/paper.md §2.2)")


def part_sources(parts, source: str) -> dict[str, tuple[str, ...]]:
    """The sources each part reads; every part reads the benchmarks (decontamination)."""
    out = {"benchmarks": tuple(n for n in BENCHMARKS if source == "hub" or SOURCES[n].mirror_files)}
    if "rl" in parts:
        out.update(TRAIN[source])
    if "sft" in parts:
        out["sft_prompts"] = SFT_SOURCES
    return out


def where(name: str, source: str) -> str:
    """Where a source would load from and at which pin, without loading it."""
    src = SOURCES[name]
    try:
        place, paths = locate(src, LOAD_MODE[source])
    except SourceUnavailable as err:
        return f"UNAVAILABLE ({err.reason})"
    if place == "mirror":
        return "mirror: " + ", ".join(str(p) for p in paths)
    if place == "git":
        return "git: " + ", ".join(f"{f.repo}@{f.commit[:12]}:{f.repo_path}" for f in src.mirror_files)
    return f"hub: {src.hub_id}@{src.revision or 'default branch (revision UNVERIFIED)'}"


def plan(parts, source: str, cfg, out: Path) -> str:
    """What a build would read, do and write."""
    rules = {n: getattr(cfg, n) for n in ("ngram_decontam", "ngram_boilerplate_df", "min_code_tests")}
    lines = [f"data config {config_hash(cfg)} (full, source={source}): {json.dumps(rules)}"]
    for group, names in part_sources(parts, source).items():
        lines.append(f"{group}:")
        lines += [f"  {n}: {where(n, source)}" for n in names]
    lines += ["filters: validate -> exact dedup -> %d-gram decontamination against every benchmark%s"
              % (cfg.ngram_decontam, f" -> code >= {cfg.min_code_tests} tests" if "rl" in parts else ""),
              "not run: the DeepSeek-R1 teacher filters of RL (docs/paper.md §2.3)" if "rl" in parts else ""]
    lines += [NOT_RUN_SFT] if "sft" in parts else []
    files = [FILES[s] for s in part_sources(parts, source) if s in FILES] + ["funnel.csv", "manifest.json", "README.md"]
    lines.append("writes: " + ", ".join(str(out / f) for f in files))
    return "\n".join(ln for ln in lines if ln)


def build(parts, source: str, cfg) -> tuple[dict[str, list[dict]], cu.Funnel]:
    """The splits of ``parts`` and the funnel: RL through ``build_real_world``, SFT prompts beside it against the
    same benchmarks (loaded once)."""
    if "sft" in parts and source != "hub":
        raise ValueError("the SFT prompt sources are hub only (no mirror layout): use --source hub, or --parts rl")
    if "rl" in parts:
        world = build_real_world(cfg)
        funnel, evals = world.funnel, {n: world.splits[n] for n in BENCHMARKS if n in world.splits}
        splits = {s: world.splits[s] for s in ("math_rl", "code_rl")}
    else:
        funnel, splits = cu.Funnel(), {}
        evals = _benchmarks(source, funnel)
    if "sft" in parts:
        # rows of a domain the kit does not train (e.g. science) fail validation and are counted
        splits["sft_prompts"] = _train_split("sft_prompts", SFT_SOURCES, source, cfg, benchmark_index(evals, cfg),
                                             funnel, ("teacher_and_selection", NOT_RUN_SFT))
    return splits, funnel


def manifest(parts, source: str, cfg, splits: dict, out: Path) -> dict:
    """Config, sources with where they loaded from and their pins, and each file's rows and sha256."""
    sources = {}
    for group, names in part_sources(parts, source).items():
        for name in names:
            src = SOURCES[name]
            sources[name] = {"group": group, "loaded_from": where(name, source), "hub_id": src.hub_id,
                             "revision": src.revision, "revision_note": src.revision_note,
                             "mirror_files": [{"path": f.path, "repo": f.repo, "commit": f.commit,
                                               "sha256": f.sha256} for f in src.mirror_files]}
    files = {FILES[s]: {"rows": len(rows), "sha256": sha256_file(out / FILES[s])} for s, rows in splits.items()
             if rows}
    return {"data_config": to_dict(cfg), "config_hash": config_hash(cfg), "source": source, "parts": list(parts),
            "sources": sources, "files": files}


def run(out: Path, source: str = "hub", parts=None, dry_run: bool = False, **overrides) -> dict | str:
    """Build and write every file of ``parts`` (``overrides``: DataConfig fields); returns the manifest, or with
    ``dry_run`` only the ``plan``. A split whose every row was dropped gets no file, and raises once the funnel,
    manifest and card say why: a training file without rows would only fail later, on a GPU."""
    parts = tuple(parts or (PARTS if source == "hub" else ("rl",)))  # the SFT prompt sets are hub only
    cfg = get_config("data", "full", **{"source": source, **overrides})
    if dry_run:
        return plan(parts, source, cfg, out)
    splits, funnel = build(parts, source, cfg)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in splits.items():
        if rows:  # verl's parquet (read by the trainers' load_dataset) or JSON lines, written atomically
            with artifacts.replacing(out / FILES[name]) as tmp:
                if FILES[name].endswith(".parquet"):
                    Dataset.from_list(rows).to_parquet(str(tmp))
                else:
                    tmp.write_text(dumps_rows(rows))
    (out / "funnel.csv").write_text(funnel_csv(funnel))
    info = manifest(parts, source, cfg, splits, out)
    (out / "manifest.json").write_text(json.dumps(info, indent=1, sort_keys=True))
    (out / "README.md").write_text(card.data_card(splits, funnel, info))
    if empty := [name for name, rows in splits.items() if not rows]:
        raise ValueError(f"{', '.join(empty)}: every row was dropped (drops by reason in the data card "
                         f"{out / 'README.md'}); no file written for it")
    return info


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m klear_lib.data.full.build", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder for the files")
    parser.add_argument("--source", choices=("hub", "mirror"), default="hub")
    parser.add_argument("--parts", nargs="*", choices=PARTS, help="default: rl and sft (hub), rl (mirror)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="DataConfig fields (e.g. min_code_tests=1: the mirror's code sets have 2-6 tests)")
    parser.add_argument("--dry-run", action="store_true", help="print what would be read and written")
    args = parser.parse_args(argv)
    overrides = parse_overrides(args.set)
    try:
        info = run(Path(args.out), args.source, args.parts, args.dry_run, **overrides)
    except (KeyError, ValueError, FileNotFoundError) as err:  # FileNotFoundError: SourceUnavailable
        parser.exit(2, f"{parser.prog}: {err}\n")
    print(info if args.dry_run else "\n".join(f"{name}: {f['rows']} rows" for name, f in info["files"].items()))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
