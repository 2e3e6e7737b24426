"""The data card of a full build (``klear_lib.data.full.build``): Hugging Face front matter, Gebru et al.'s seven
sections, the counts, the drops by reason and the funnel, and the provenance of every source, all generated from
the build (never typed)."""
from __future__ import annotations

import pandas as pd

from klear_lib.data.cards import sections, front_matter
from klear_lib.data.curation import Funnel
from klear_lib.data.report import funnel_frame, split_counts
from klear_lib.data.sources import SOURCES
from klear_lib.tables import markdown_table

ROLE = {"math_rl": "math RL prompts with reference answers (the math RL stage, docs/paper.md §2.4)",
        "code_rl": "code RL problems with test cases (the code RL stage, docs/paper.md §2.4)",
        "sft_prompts": "SFT prompts without responses, for a teacher to answer (docs/paper.md §2.2)"}


def drops(funnel: Funnel) -> pd.DataFrame:
    """Every drop of the build, one row per (pool, stage, reason), in pipeline order."""
    recs = [{"pool": pool, "stage": s.stage, "reason": reason, "rows": n}
            for pool, s in funnel.steps for reason, n in sorted(s.dropped.items())]
    return pd.DataFrame(recs, columns=["pool", "stage", "reason", "rows"])


def provenance(info: dict) -> pd.DataFrame:
    """One row per source: its role, where it loaded from, and its pin (with the registry's note on it)."""
    recs = [{"source": name, "used for": s["group"], "loaded from": s["loaded_from"],
             "pin": s["revision"] or ("; ".join(f"{f['repo']}@{f['commit'][:12]} sha256 {f['sha256'][:12]}"
                                                 for f in s["mirror_files"]) or "UNVERIFIED (default branch)"),
             "pin checked": s["revision_note"] or ("sha256 of each file" if s["mirror_files"] else "UNVERIFIED")}
            for name, s in sorted(info["sources"].items())]
    return pd.DataFrame(recs)


def data_card(splits: dict[str, list[dict]], funnel: Funnel, info: dict) -> str:
    counts, cfg = split_counts(splits)[["rows", "items", "math", "code"]], info["data_config"]
    files = "\n".join(f"* `{name}`: {f['rows']:,} rows, sha256 `{f['sha256']}`" for name, f in info["files"].items())
    licenses = sorted({SOURCES[n].license for n, s in info["sources"].items() if s["group"] != "benchmarks"})
    hub_ids = sorted({s["hub_id"] for s in info["sources"].values() if s["hub_id"] and s["group"] != "benchmarks"})
    head = front_matter("Klear-Reasoner full-recipe training files", "other", sum(map(len, splits.values())),
                        ["klear-reasoner", "rl", "sft"], hub_ids)
    body = sections(
        "The files a run of the paper's recipe trains on, built from released data only: "
        + "; ".join(f"`{n}`: {ROLE[n]}" for n in splits) + ".",
        f"Generated counts:\n\n{markdown_table(counts)}\n\nFiles:\n\n{files}",
        f"Read by `python -m klear_lib.data.full.build --source {info['source']}` from the sources below at their "
        "pinned revisions (`klear_lib/data/sources.py`).",
        "Each source is mapped to the kit's verl-style schema and validated; the pools are exactly "
        f"deduplicated and {cfg['ngram_decontam']}-gram decontaminated against every benchmark; code RL keeps "
        f"problems with at least {cfg['min_code_tests']} tests"
        + ("" if cfg["min_code_tests"] == 16 else " (the paper: 16, docs/paper.md §2.3; overridden here)")
        + ". What each step dropped, and why:\n\n"
        + (markdown_table(drops(funnel)) if len(drops(funnel)) else "(nothing dropped)")
        + f"\n\nThe whole funnel (generated):\n\n{markdown_table(funnel_frame(funnel))}",
        "RL training (`math_rl`, `code_rl`: `TRAIN_FILE` of `scripts/launch_rl_full.sh`) and the input of teacher "
        "sampling for SFT (`sft_prompts`: `python -m klear_lib.data.full.traces`). Not for evaluation: every pool "
        "is decontaminated against the benchmarks.",
        "Not redistributed by the kit; each source keeps its own license: " + "; ".join(licenses) + ".",
        "Pins and row counts live in `klear_lib/data/sources.py`; rebuild after changing them.")
    prov = (f"## Provenance\n\nData config `{info['config_hash']}`, source `{info['source']}`.\n\n"
            f"{markdown_table(provenance(info))}\n")
    return f"{head}\n# Klear-Reasoner full-recipe training files\n\n{body}\n\n{prov}"
