"""The real-data world for ``full`` (``source="hub"``) or its offline stand-in (``source="mirror"``).

Evaluation splits are the benchmarks; RL splits are the released Klear subsets (hub) or the DeepScaleR/rLLM files
(mirror), curated by the same pure filters: validate -> exact dedup -> 9-gram decontamination against every
benchmark -> >= 16 tests for code. The teacher-sampling filters need DeepSeek-R1 rollouts (docs/paper.md §2.3) and
are not run here: the released subsets are already filtered, and the funnel says so.
"""
from __future__ import annotations

from tqdm.auto import tqdm

from klear_lib.configs.base import config_hash
from klear_lib.data import curation as cu
from klear_lib.data.curation import World
from klear_lib.data.schema import n_code_tests
from klear_lib.data.sources import BENCHMARKS, SOURCES, decontam_text, load_source

TRAIN = {"hub": {"math_rl": ("klear_math_sub30k",), "code_rl": ("klear_code_sub15k",)},
         "mirror": {"math_rl": ("deepscaler_math", "deepscaler_aime"), "code_rl": ("rllm_lcb_train", "rllm_leetcode")}}

LOAD_MODE = {"hub": "auto", "mirror": "mirror"}  # at full a mirror still takes precedence for the files it holds


def _benchmarks(mode: str, funnel: cu.Funnel) -> dict[str, list[dict]]:
    out = {}
    for name in BENCHMARKS:
        if mode == "mirror" and not SOURCES[name].mirror_files:  # LiveCodeBench v6 is hub only
            continue
        rows, f = load_source(name, LOAD_MODE[mode], on_error="raise")
        funnel.steps += f.steps
        out[name] = rows
    return out


def _train_split(split: str, names: tuple[str, ...], mode: str, cfg, index: cu.NgramIndex, funnel: cu.Funnel,
                 not_run: tuple[str, str] = ("teacher_filters", "not run: needs 16 DeepSeek-R1 samples per prompt "
                                             "(docs/paper.md §2.3)")) -> list[dict]:
    """Every source of ``names``, loaded with drops counted, deduplicated across sources and decontaminated (code
    RL: and cut to ``min_code_tests``); ``not_run`` is the (stage, note) of the filters the kit cannot run."""
    rows = []
    for name in names:
        part, f = load_source(name, LOAD_MODE[mode], on_error="drop")
        funnel.steps += [(f"{split}:{p}", s) for p, s in f.steps]
        rows += part
    rows = funnel.run(split, rows, lambda r: cu.exact_dedup(tqdm(r, desc=f"{split}: exact dedup", unit="row")),
                      lambda r: cu.decontaminate(tqdm(r, desc=f"{split}: decontaminate", unit="row"), (),
                                                 index=index, text=decontam_text))
    if split == "code_rl":
        rows = funnel.run(split, rows, lambda r: cu.keep_where(r, "min_tests", lambda row: None if n_code_tests(
            row["reward_model"]["ground_truth"]) >= cfg.min_code_tests else "too_few_tests"))
    funnel.add(split, cu.Step(not_run[0], len(rows), len(rows), {}, note=not_run[1]))
    return rows


def benchmark_index(evals: dict[str, list[dict]], cfg) -> cu.NgramIndex:
    """The n-gram index of every benchmark question that training pools are decontaminated against."""
    return cu.ngram_index((decontam_text(r) for rows in evals.values() for r in rows), cfg.ngram_decontam,
                          cfg.ngram_boilerplate_df)


def build_real_world(cfg):
    """Benchmarks + curated RL splits from real sources (``cfg.source`` in mirror | hub); a source that cannot
    be loaded raises ``SourceUnavailable`` (at ``full`` every benchmark is required)."""
    mode, funnel = cfg.source, cu.Funnel()
    if mode not in TRAIN:
        raise ValueError(f"data config source={mode!r}: the real world needs 'hub' or 'mirror'")
    evals = _benchmarks(mode, funnel)
    index = benchmark_index(evals, cfg)
    splits = {split: _train_split(split, names, mode, cfg, index, funnel) for split, names in TRAIN[mode].items()}
    splits.update(evals)
    return World(splits=splits, funnel=funnel, config_hash=config_hash(cfg))
