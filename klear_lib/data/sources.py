"""The registry of real sources (benchmarks, RL training sets, SFT prompt sets), mapped to one verl-style schema.

Each source names where it lives — a Hugging Face dataset at a pinned revision, and/or files with a registered
layout inside an offline mirror (``$KLEAR_BENCHMARKS``), each file pinned to the git commit that published it —
and how its records map to rows. ``klear_lib.data.fetch`` decides where records come from, ``klear_lib.data.mappers``
turns each record into a row.
A revision of ``None`` is UNVERIFIED: no commit of that dataset could be checked here, and ``revision_note`` says
why. Row counts (``hub_rows``) come from the dataset's own card and set the data card's ``size_categories``.
"""
from __future__ import annotations

import dataclasses
import functools
import logging

from klear_lib.data import curation as cu
from klear_lib.data.fetch import MirrorFile, SourceUnavailable, git_file, hub_records, locate, mirror_dir, read_records
from klear_lib.data.mappers import MAPPERS, FieldError, map_one
from klear_lib.data.schema import RowError, validate_rl_row

log = logging.getLogger(__name__)
LCB_WINDOWS = {"lcb_v5": ("2024-08-01", "2025-02-01"), "lcb_v6": ("2025-02-01", "2025-05-01")}  # docs/paper.md §4
LCB_FILES = tuple(f"test{i}.jsonl" for i in ("", 2, 3, 4, 5, 6))  # code_generation_lite release_v6, all months
USES = {"benchmark": "Evaluation only: never trained on; every training pool is 9-gram decontaminated against it.",
        "rl_train": "RL training prompts (the `full` preset's math or code RL stage); not for evaluation.",
        "sft_prompts": "SFT prompts only (responses come from a teacher model); not for evaluation."}


@dataclasses.dataclass(frozen=True)
class Source:
    """One dataset: its hub home (id, pinned revision, config/split, mapper) and/or its mirror files and mapper."""

    name: str
    kind: str                      # benchmark | rl_train | sft_prompts
    ability: str                   # math | code | mixed
    description: str
    paper: str                     # where docs/paper.md names it
    license: str
    hub_id: str | None = None
    revision: str | None = None    # a dataset commit; None = UNVERIFIED (the default branch is loaded, with a warning)
    revision_note: str = ""        # where the revision was checked, or why it could not be
    hub_config: str | None = None
    hub_split: str = "train"
    hub_mapper: str | None = None
    hub_files: tuple[str, ...] = ()   # data files read instead of a config (loading-script repos: LCB, TACO, APPS)
    hub_rows: int | None = None       # rows of the hub split, per its dataset card (size_categories)
    mirror_files: tuple[MirrorFile, ...] = ()
    mirror_mapper: str | None = None
    mirror_rows: int | None = None    # records in the mirror files (checked by ``make test-real``)
    problems: int | None = None       # a benchmark's size once loaded (after its window); any other count raises


class RecordError(RowError):
    """A malformed benchmark record: the message names its file and line (or hub row), the field and why."""

    def __init__(self, place: str, field: str, why: str, row_id: str = "<no id>"):
        super().__init__(row_id, field, why)
        self.place, self.args = place, (f"{place}: field {field!r}: {why}",)


def _klear(path: str, sha: str) -> MirrorFile:
    """A file of the authors' own repository at the last commit we know (docs/paper.md §4, §6)."""
    return MirrorFile(f"klear_reasoner_eval/{path.split('/')[-1]}", "Kwai-Klear/KlearReasoner",
                      "3422f6d36a8251cb1c86a7b943c7c815850864fd", path, sha)


def _deepscaler(name: str, sha: str) -> MirrorFile:
    """A DeepScaleR training file (docs/paper.md §2.3) at the commit it was published in."""
    return MirrorFile(f"math_train_deepscaler/{name}", "agentica-project/deepscaler",
                      "95ef74ffee001cce89463f2d61dfdce1d03576c1", f"deepscaler/data/train/{name}", sha)


_RLLM_FORK = ("winnieyangwannan/rllm", "5255304e87b07e6e81e7c61d9dac3e4f160ec6a9")  # rLLM history before its rewrite
_M, _C = "Apache-2.0", "MIT"
_VERIFIED = "verified offline: pinned in public loader code and equal to the head commit on a stored hub page (2026)"
_THIRD_PARTY = "UNVERIFIED: pinned by third-party loader code; not checked against the hub (no network here)"
_LCB_REV = "0fe84c3912ea0c4d4a78037083943e8f0c4dd505"
_LCB_NOTE = ("; a loading-script repo, so its test*.jsonl files (about 4.5 GB in all) are read and filtered by "
             "contest_date; public tests only (the private ones are pickled)")
SOURCES = {s.name: s for s in (
    # --- benchmarks (docs/paper.md §4); mirror: the authors' own eval files, MATH-500, LCB v5 public tests ---
    Source("aime2024", "benchmark", "math", "AIME 2024 I+II (30 problems)", "docs/paper.md §4",
           "Apache-2.0 repo; problems (c) MAA", hub_id="HuggingFaceH4/aime_2024", hub_mapper="problem_answer",
           revision="2fe88a2f1091d5048c0f36abc874fb997b3dd99a", revision_note=_VERIFIED,
           hub_rows=30, mirror_files=(_klear("benchmarks/aime24.qs.jsonl",
                                             "dc3c6f08943fd7ee178c673894c20144a8b28dcc4c28ae115bfd6cbd13859971"),),
           mirror_mapper="klear_eval", mirror_rows=30, problems=30),
    Source("aime2025", "benchmark", "math", "AIME 2025 I+II (30 problems)", "docs/paper.md §4",
           "Apache-2.0 repo; problems (c) MAA", hub_id="MathArena/aime_2025", hub_mapper="problem_answer",
           revision="c94da77eb22bbd6439e62a323bec18493a421302", revision_note=_THIRD_PARTY,
           hub_rows=30, mirror_files=(_klear("benchmarks/aime25.qs.jsonl",
                                             "cf7ec6f3e905fd6108b38dea066acac0bcd0dfd5d49174d18d404567ab8e930a"),),
           mirror_mapper="klear_eval", mirror_rows=30, problems=30),
    Source("hmmt2025", "benchmark", "math", "HMMT February 2025 (30 problems)", "docs/paper.md §4-5",
           "Apache-2.0 repo; problems (c) HMMT; hub copy CC-BY-NC-SA-4.0", hub_id="MathArena/hmmt_feb_2025",
           hub_mapper="problem_answer", hub_rows=30, revision="6fdc4277120810ff75aa22d2d5489b91f7a262a1",
           revision_note=_THIRD_PARTY + "; a stored hub page shows a later head (caf7304, a README edit)",
           mirror_files=(_klear("benchmarks/HMMT-202502.jsonl",
                                "9826500e5c02ad4049f1c9c51beb9541d3e520419a298314feccd0d378b3dfd9"),),
           mirror_mapper="klear_eval", mirror_rows=30, problems=30),
    Source("math500", "benchmark", "math", "MATH-500 (the PRM800K test subset)", "not in the paper: a judge check",
           _C, hub_id="HuggingFaceH4/MATH-500", hub_split="test", hub_mapper="problem_answer", hub_rows=500,
           revision="6e4ed1a2a79af7d8630a6b768ec859cb5af4d3be", revision_note=_THIRD_PARTY,
           mirror_files=(MirrorFile("math500/test.jsonl", "hkust-nlp/simpleRL-reason",
                                    "cf1c7858bfc145a27aa733e75d930d34f0d318a6",
                                    "examples/simplelr_math_eval/data/math500/test.jsonl",
                                    "35dc41080a3680858b27fa7e0533d2d547825316fc5dafe5d316f4ccc5a06132"),),
           mirror_mapper="problem_answer", mirror_rows=500, problems=500),
    Source("lcb_v5", "benchmark", "code", "LiveCodeBench 2024-08-01..2025-02-01 (public tests only)",
           "docs/paper.md §4", "MIT (rLLM) / Apache-2.0 (QwQ); statements (c) AtCoder/LeetCode",
           hub_id="livecodebench/code_generation_lite", hub_mapper="lcb_hub", hub_files=LCB_FILES, hub_rows=279,
           revision=_LCB_REV, revision_note=_VERIFIED + _LCB_NOTE,
           mirror_files=(
               MirrorFile("qwq_eval/livecodebench_v5.jsonl", "QwenLM/QwQ", "620a5eadc89ff464d339367dd9c9973a93215c81",
                          "eval/data/livecodebench_v5.jsonl",
                          "6441538a8f5f4d598480315fb5b0b4ca47489bfb7d496972e290d06e39679905"),
               MirrorFile("livecodebench_v5_rllm_public_tests/livecodebench.json", *_RLLM_FORK,
                          "rllm/data/test/code/livecodebench.json",
                          "b94212d8c882d7ff99ebde702d0a3319e5c94440faed6ae8984cd850f29a6cd6")),
           mirror_mapper="lcb_local", mirror_rows=279, problems=279),  # the count DeepCoder and QwQ report
    Source("lcb_v6", "benchmark", "code", "LiveCodeBench 2025-02-01..2025-05-01 (hub only)", "docs/paper.md §4",
           "statements (c) AtCoder/LeetCode/Codeforces", hub_id="livecodebench/code_generation_lite",
           hub_mapper="lcb_hub",  # problems: UNVERIFIED (no copy of the window could be counted here)
           hub_files=LCB_FILES, revision=_LCB_REV, revision_note=_VERIFIED + _LCB_NOTE),
    # --- RL training (docs/paper.md §2.3, §6); the mirror stands in with DeepScaleR and rLLM files ---
    Source("klear_math_sub30k", "rl_train", "math", "Klear-Reasoner math RL subset (30K of 88K)",
           "docs/paper.md §2.3, §6", _M, hub_id="Kwai-Klear/KlearReasoner-MathSub-30K", hub_mapper="verl",
           hub_rows=30_000, revision="972d1bd91843936551f0ee2bc2bd5ea259c9397f",
           revision_note="UNVERIFIED: a real commit of the dataset (a README edit after the data upload 8f0c7ce), "
                         "seen on stored hub pages; whether it is the head could not be checked"),
    Source("klear_code_sub15k", "rl_train", "code", "Klear-Reasoner code RL subset (cleaned rLLM data)",
           "docs/paper.md §2.3, §6", _M, hub_id="Kwai-Klear/KlearReasoner-CodeSub-15K", hub_mapper="verl",
           hub_rows=15_001, revision="3f4fdddb0f33cd4364ecf81f83d714849d7d7e64",
           revision_note="UNVERIFIED: a real commit of the dataset seen on stored hub pages; whether it is the head "
                         "could not be checked. One 3.9 GiB JSON file: loading needs memory"),
    Source("deepscaler_math", "rl_train", "math", "DeepScaleR's MATH-train problems with answers",
           "docs/paper.md §2.3 (DeepScaleR)", _C,
           mirror_files=(_deepscaler("math.json", "569230b362fd501e1a33d8f29aae3b4b989d32e2b91b07c3f48493528c3bf6d2"),),
           mirror_mapper="problem_answer", mirror_rows=7474),
    Source("deepscaler_aime", "rl_train", "math", "DeepScaleR's AIME 1983-2023 problems",
           "docs/paper.md §2.3 (DeepScaleR)", _C,
           mirror_files=(_deepscaler("aime.json", "78f1b9bae6d00794b43e79a5842917f7ef4e355d9b705743c61f255f3c7c5d49"),),
           mirror_mapper="problem_answer", mirror_rows=975),
    Source("rllm_lcb_train", "rl_train", "code", "rLLM's older LiveCodeBench problems with public tests",
           "docs/paper.md §2.3 (rLLM code data)", _C,
           mirror_files=(MirrorFile("code_rl_train_rllm/livecodebench.json", *_RLLM_FORK,
                                    "rllm/data/train/code/livecodebench.json",
                                    "c572714eea5605852a115a643431b0d2c9d915bf4f340aa23aa6062a3fbc5221"),),
           mirror_mapper="rllm_tests", mirror_rows=580),
    Source("rllm_leetcode", "rl_train", "code", "rLLM's LeetCode problems with assert tests and a reference solution",
           "docs/paper.md §2.3 (rLLM code data)", _C,
           mirror_files=(MirrorFile("code_rl_train_rllm/leetcode.json", "agentica-project/rllm",
                                    "874daa4acb7f451dc2a4b2b6e8ce28f5aa88d1f5", "rllm/data/train/code/leetcode.json",
                                    "4bd9c5e47165d184b3f3273005cdcd1ef161f55e1ad727101522a288203d2017"),),
           mirror_mapper="rllm_leetcode", mirror_rows=1889),
    # --- SFT prompt sources (docs/paper.md §2.2); hub only ---
    Source("openthoughts3", "sft_prompts", "mixed", "OpenThoughts3-1.2M prompts", "docs/paper.md §2.2", "Apache-2.0",
           hub_id="open-thoughts/OpenThoughts3-1.2M", hub_mapper="openthoughts", hub_rows=1_200_000,
           revision="61bcf9d4eb38b30295efc2021227a63cc5bb34c8",
           revision_note=_THIRD_PARTY + "; the column names the mapper reads are UNVERIFIED too"),
    Source("numinamath", "sft_prompts", "math", "NuminaMath-1.5 problems (which NuminaMath: UNVERIFIED)",
           "docs/paper.md §2.2", "Apache-2.0", hub_id="AI-MO/NuminaMath-1.5", hub_mapper="numina", hub_rows=896_215,
           revision="1b05109f9e5c1ad06c0663519502416c30b300f8", revision_note=_THIRD_PARTY),
    Source("acereason_1_1_sft", "sft_prompts", "mixed", "AceReason-Nemotron 1.1 SFT prompts", "docs/paper.md §2.2",
           "CC-BY-4.0 (UNVERIFIED)", hub_id="nvidia/AceReason-1.1-SFT", hub_mapper="acereason",
           revision_note="UNVERIFIED: no commit, row count or license of this dataset was found in stored material"),
    Source("opencodereasoning", "sft_prompts", "code", "OpenCodeReasoning prompts", "docs/paper.md §2.2",
           "CC-BY-4.0", hub_id="nvidia/OpenCodeReasoning", hub_config="split_0", hub_split="split_0",
           hub_mapper="ocr", hub_rows=567_850,
           revision_note="UNVERIFIED: only an old commit (e4073b22, before the data upload) was found; split_1's "
                         "prompts are placeholders to be filled from TACO/APPS, so only split_0 is read"),
    Source("taco", "sft_prompts", "code", "TACO problems", "docs/paper.md §2.2", "Apache-2.0", hub_id="BAAI/TACO",
           hub_mapper="taco", hub_rows=25_443, revision="d593ed0a2becbbc952230bb89be09189bf1056dc",
           hub_files=("ALL/train-*.parquet",),
           revision_note=_THIRD_PARTY + "; the repo keeps a loading script (datasets 5 runs none), so its parquet "
                         "files are read; that this revision holds them is UNVERIFIED"),
    Source("apps", "sft_prompts", "code", "APPS problems", "docs/paper.md §2.2", _C, hub_id="codeparrot/apps",
           hub_mapper="taco", hub_rows=5_000, revision="21e74ddf8de1a21436da12e3e653065c5213e9d1",
           hub_files=("train.jsonl",),
           revision_note=_THIRD_PARTY + "; a loading-script repo, so its train.jsonl is read directly"),
    Source("codeforces", "sft_prompts", "code", "open-r1/codeforces problems", "docs/paper.md §2.2", "CC-BY-4.0",
           hub_id="open-r1/codeforces", hub_mapper="codeforces", revision="fbe3f6e903ee854eec2e69e9d96d0306cde59baf",
           revision_note=_THIRD_PARTY),
)}
BENCHMARKS = tuple(n for n, s in SOURCES.items() if s.kind == "benchmark")


def get_source(name: str) -> Source:
    """A source by name; unknown names raise listing the known ones."""
    if name not in SOURCES:
        raise KeyError(f"unknown source {name!r}; known: {sorted(SOURCES)}")
    return SOURCES[name]


def _join_lcb(m, t):
    """One QwQ LCB v5 record with rLLM's tests for it; a record that is not an object is passed on to fail mapping."""
    if not isinstance(m, dict) or not isinstance(t, dict):
        return t if isinstance(m, dict) else m
    return {**m, "problem": t.get("problem"), "starter_code": t.get("starter_code"), "tests": t.get("tests")}


def located_records(src: Source, mode: str = "auto") -> tuple[list[tuple[str, object]], str, str, str]:
    """``(pairs, mapper name, where, origin)``: ``(place, record)`` pairs, where they load from (mirror | hub | git,
    ``fetch.locate``) and what that is (files, or the hub dataset at its revision) for error messages."""
    where, paths = locate(src, mode)
    if where == "hub":
        origin = f"hub {src.hub_id}@{(src.revision or 'main')[:12]}"
        return [(f"{origin}: row {k}", rec) for k, rec in enumerate(hub_records(src), 1)], src.hub_mapper, where, origin
    if where == "git":
        paths = [git_file(src, f) for f in src.mirror_files]
    if src.mirror_mapper != "lcb_local":
        pairs = [pair for f in paths for pair in read_records(f)]
    else:  # QwQ's LCB v5 list (ids, dates, prompt) joined with rLLM's row-aligned public tests; places name both files
        meta, tests = (read_records(f) for f in paths)
        if len(meta) != len(tests):
            raise ValueError(f"{paths[0]}: {len(meta)} problems vs {len(tests)} test rows in {paths[1]}; "
                             "the files are not row-aligned")
        pairs = [(f"{mp} and {tp}", _join_lcb(m, t)) for (mp, m), (tp, t) in zip(meta, tests)]
    return pairs, src.mirror_mapper, where, ", ".join(map(str, paths))


def raw_records(src: Source, mode: str = "auto") -> tuple[list, str, str]:
    """``(records, mapper name, where)`` for ``src``; ``where`` is mirror | hub | git (``fetch.locate``)."""
    pairs, mapper, where, _ = located_records(src, mode)
    return [rec for _, rec in pairs], mapper, where


def map_records(src: Source, records: list, mapper_name: str,
                places: list[str] | None = None) -> tuple[list[dict], cu.Step]:
    """Map raw records; a record the mapper cannot read is dropped as ``unmappable:<field>`` and counted, or,
    given the records' ``places`` (strict loading), raises ``RecordError`` naming its place and field."""
    mapper, rows, dropped = MAPPERS[mapper_name], [], {}
    for i, rec in enumerate(records):
        try:
            rows.append(map_one(src, mapper, i, rec))
        except FieldError as err:
            if places is not None:
                raise RecordError(places[i], err.field, err.why) from None
            dropped[f"unmappable:{err.field}"] = dropped.get(f"unmappable:{err.field}", 0) + 1
    return rows, cu.Step("map_to_schema", len(records), len(rows), dict(sorted(dropped.items())))


def in_window(row: dict, window: tuple[str, str] | None, *, undated: str) -> bool:
    """Whether ``extra_info.contest_date`` (its first 10 characters, YYYY-MM-DD) lies in ``[start, end)``; always
    True without a window. A row without a date is outside the window (``undated="outside"``: the loaders' date
    filter drops it) or raises ``ValueError`` naming the row (``undated="raise"``: a benchmark's rows carry one)."""
    if window is None:
        return True
    date = (row.get("extra_info") or {}).get("contest_date")
    if date is None and undated == "raise":
        raise ValueError(f"row {(row.get('extra_info') or {}).get('id')}: field extra_info.contest_date missing")
    return bool(date) and window[0] <= str(date)[:10] < window[1]


def load_source(name: str, mode: str = "auto", on_error: str = "drop") -> tuple[list[dict], cu.Funnel]:
    """Rows of source ``name`` in the common schema, and the funnel of what mapping/validation dropped.

    ``mode``: see ``fetch.locate``. ``on_error="drop"`` counts unreadable records and invalid rows in the funnel;
    ``"raise"`` raises ``RecordError`` (file and line, or hub row, and the field) on the first one, and a benchmark
    whose size is not its registered ``problems`` raises ``ValueError``. Records outside a LiveCodeBench window
    are left out by policy: counted, and logged. A source found nowhere raises ``SourceUnavailable``.
    """
    src, funnel, strict = get_source(name), cu.Funnel(), on_error == "raise"
    pairs, mapper, where, origin = located_records(src, mode)
    rows, step = map_records(src, [rec for _, rec in pairs], mapper, [p for p, _ in pairs] if strict else None)
    places = {id(row): place for row, (place, _) in zip(rows, pairs)} if strict else {}  # strict: row i = record i
    funnel.add(name, dataclasses.replace(step, note=f"from {where}"))
    if name in LCB_WINDOWS:
        window = LCB_WINDOWS[name]
        outside = lambda r: None if in_window(r, window, undated="outside") else "outside_window"  # noqa: E731
        rows, step = cu.keep_where(rows, "date_window", outside, note=f"[{window[0]}, {window[1]})")
        funnel.add(name, step)
        if step.rows_out < step.rows_in:  # a policy, not an error: said aloud, since load_benchmark drops the funnel
            log.info("%s: %d of %d records lie outside [%s, %s) and are left out", name,
                     step.rows_in - step.rows_out, step.rows_in, *window)
    require_answer = src.kind != "sft_prompts"
    if strict:  # every row valid, or a RecordError naming the file and line it came from
        for row in rows:
            try:
                validate_rl_row(row, require_answer=require_answer)
            except RowError as err:
                raise RecordError(places[id(row)], err.field, err.why, err.row_id) from None
        funnel.add(name, cu.Step("validate", len(rows), len(rows), {}, note="policy=raise"))
        if src.kind == "benchmark" and src.problems is None:  # a benchmark loads with its registered size
            log.warning("%s: size UNVERIFIED (no copy could be counted here); %d problems loaded from %s",
                        src.name, len(rows), origin)
        elif src.kind == "benchmark" and len(rows) != src.problems:
            raise ValueError(f"{src.name}: {len(rows)} problems in {origin}, expected {src.problems} "
                             "(Source.problems in klear_lib/data/sources.py): the files are incomplete or not the "
                             "registered ones")
    else:
        rows, step = cu.validate_rows(rows, on_error=on_error, require_answer=require_answer)
        funnel.add(name, step)
    return rows, funnel


def load_benchmark(name: str, mode: str = "auto") -> list[dict]:
    """A benchmark's rows; any malformed record raises naming its file and line, and so does a benchmark with
    more or fewer problems than its registered size (evaluation sets must be complete)."""
    if get_source(name).kind != "benchmark":
        raise KeyError(f"{name!r} is not a benchmark; benchmarks: {BENCHMARKS}")
    return load_source(name, mode, on_error="raise")[0]


def try_load_benchmark(name: str, mode: str = "auto") -> tuple[list[dict] | None, str]:
    """``(rows, where)`` or, when the source is unavailable, ``(None, "skipped: <reason>")``."""
    try:
        return load_benchmark(name, mode), locate(get_source(name), mode)[0]
    except SourceUnavailable as err:
        log.info("%s", err)
        return None, f"skipped: {err.reason}"


def decontam_text(row: dict) -> str:
    """The text decontamination compares: the bare question when known (no prompt boilerplate)."""
    return row["extra_info"].get("question") or row["prompt"][0]["content"]


def benchmark_texts(mode: str = "auto", names: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Question texts of every benchmark that loads in ``mode``; unavailable ones are skipped with a warning.

    The miniature world shares no 9-gram with any real benchmark (``make test-real`` checks it), so a world built
    without them is the same world; at ``full`` the real-world builder loads them strictly instead.
    """
    return _benchmark_texts(mode, names or BENCHMARKS, str(mirror_dir()))


@functools.lru_cache(maxsize=8)
def _benchmark_texts(mode: str, names: tuple[str, ...], _mirror: str) -> tuple[str, ...]:
    found = {n: try_load_benchmark(n, mode) for n in names}
    if skipped := {n: where for n, (rows, where) in found.items() if rows is None}:
        log.warning("real benchmarks left out of decontamination: %s (README, 'Real data')",
                    ", ".join(f"{n} ({why})" for n, why in skipped.items()))
    return tuple(decontam_text(r) for rows, _ in found.values() if rows for r in rows)
