"""Real sources for the ``full`` preset, all mapped to the one verl-compatible row schema.

Two modes: ``local`` reads the byte-exact copies in ``shared/benchmarks`` (tests, ci/tiny notebooks);
``hub`` calls ``datasets.load_dataset`` with a pinned revision (``full`` only; never at import or in tests).
Revisions we could not check are ``"main"`` and marked UNVERIFIED, as are hub field names we could not read.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path
from typing import Callable

from klear_lib.data import curation as cu
from klear_lib.data.schema import RowError, make_rl_row
from klear_lib.paths import benchmarks_dir

LCB_WINDOWS = {"lcb_v5": ("2024-08-01", "2025-02-01"), "lcb_v6": ("2025-02-01", "2025-05-01")}  # PAPER.md §4
CODE_PREFIX = ("You are an expert Python programmer. You will be given a question (problem specification) and will "
               "generate a correct Python program that matches the specification and passes all tests.\n\n")
_FN = re.compile(r"def (\w+)\(self")


@dataclasses.dataclass(frozen=True)
class Source:
    """One dataset: where it lives (hub id + revision, or files under ``benchmarks_dir()``) and how it maps."""

    name: str
    kind: str                      # benchmark | rl_train | sft_prompts
    ability: str                   # math | code | mixed
    description: str
    paper: str                     # where PAPER.md names it
    license: str
    hub_id: str | None = None
    revision: str | None = None    # "main" = UNVERIFIED (no sha known here)
    hub_config: str | None = None
    hub_split: str = "train"
    hub_mapper: str | None = None
    local_files: tuple[str, ...] = ()
    local_mapper: str | None = None
    expected_local: int | None = None


def _text(v, field: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise KeyError(field)
    return v


def _math(src: Source, i: int, problem, answer, extra: dict | None = None) -> dict:
    gt = answer if isinstance(answer, str) else (str(answer) if isinstance(answer, int) else None)
    row = make_rl_row(_text(problem, "prompt"), gt, ability="math", data_source=src.name, split=src.kind,
                      tier=None, extra={"index": i, **(extra or {})})
    return row


def map_klear_eval(src, i, r):
    """Klear-Reasoner's own eval files: ``messages[0].content`` and ``meta.answer|solution`` or ``answer``."""
    meta = r.get("meta", {})
    answer = r["answer"] if "answer" in r else meta.get("answer", meta.get("solution"))
    return _math(src, i, r["messages"][0]["content"], answer)


def map_problem_answer(src, i, r):
    """Rows with ``problem`` and ``answer`` (MATH-500, DeepScaleR, HF AIME/HMMT mirrors)."""
    keep = {k: r[k] for k in ("level", "subject", "unique_id", "year", "type") if k in r}
    return _math(src, i, r.get("problem"), r.get("answer"), keep)


def map_verl(src, i, r):
    """Rows already in the verl schema (Klear's released RL subsets; UNVERIFIED field layout)."""
    content = r["prompt"][0]["content"] if isinstance(r.get("prompt"), list) else r.get("prompt")
    row = make_rl_row(_text(content, "prompt"), r.get("reward_model", {}).get("ground_truth"),
                      ability=r.get("ability", src.ability), data_source=src.name, split=src.kind, tier=None,
                      extra={"index": i, "orig_data_source": r.get("data_source")})
    return row


def _tests_truth(tests: list[dict], starter: str = "") -> str:
    kind = tests[0]["testtype"] if tests else "stdin"
    out = {"inputs": [t["input"] for t in tests], "outputs": [t["output"] for t in tests], "testtype": kind}
    if kind == "functional":
        fn = _FN.search(starter or "")
        out["fn_name"] = fn.group(1) if fn else None
    return json.dumps(out)


def _code(src, i, prompt, truth, extra):
    return make_rl_row(_text(prompt, "prompt"), truth, ability="code", data_source=src.name, split=src.kind,
                       tier=None, extra={"index": i, **extra})


def map_rllm_tests(src, i, r):
    """rLLM/DeepCoder files: ``problem``, ``starter_code``, ``tests`` [{input, output, testtype}]."""
    return _code(src, i, CODE_PREFIX + r["problem"], _tests_truth(r["tests"], r.get("starter_code", "")),
                 {"question": r["problem"]})


def map_rllm_leetcode(src, i, r):
    """rLLM LeetCode: ``problem`` and assert-based ``tests.functional`` (kept in that functional format)."""
    return _code(src, i, r["problem"], json.dumps({"functional": r["tests"]["functional"]}), {"question": r["problem"]})


def map_lcb_hub(src, i, r):
    """``livecodebench/code_generation_lite`` rows; public tests only (private ones need LCB's pickle decoding)."""
    tests = json.loads(r["public_test_cases"])
    meta = json.loads(r.get("metadata") or "{}")
    truth = json.loads(_tests_truth(tests, r.get("starter_code", "")))
    truth["fn_name"] = meta.get("func_name", truth.get("fn_name"))
    return _code(src, i, CODE_PREFIX + r["question_content"], json.dumps(truth),
                 {"question": r["question_content"], "question_id": r["question_id"],
                  "contest_date": r["contest_date"][:10], "platform": r.get("platform")})


def map_prompt_only(field: str, ability: str, ability_field: str | None = None) -> Callable:
    """SFT prompt sources: a prompt (``field``; ``a.0.b`` walks nested keys), no reference answer; the ability
    is fixed or read from ``ability_field`` (rows of other domains then fail validation and are counted)."""
    def mapper(src, i, r):
        v = r
        for key in field.split("."):
            v = v[int(key)] if key.isdigit() else v[key]
        kind = r.get(ability_field, ability) if ability_field else ability
        row = make_rl_row(_text(v, "prompt"), "", ability=kind, data_source=src.name, split=src.kind, tier=None,
                          extra={"index": i})
        row["reward_model"]["style"] = "none"
        return row
    return mapper


MAPPERS = {"klear_eval": map_klear_eval, "problem_answer": map_problem_answer, "verl": map_verl,
           "rllm_tests": map_rllm_tests, "rllm_leetcode": map_rllm_leetcode, "lcb_hub": map_lcb_hub,
           "openthoughts": map_prompt_only("conversations.0.value", "math", "domain"),
           "numina": map_prompt_only("problem", "math"), "acereason": map_prompt_only("input", "math", "category"),
           "ocr": map_prompt_only("input", "code"), "taco": map_prompt_only("question", "code"),
           "codeforces": map_prompt_only("description", "code")}


_M, _C = "Apache-2.0", "MIT"
SOURCES = {s.name: s for s in (
    # --- benchmarks (PAPER.md §4) ---
    Source("aime2024", "benchmark", "math", "AIME 2024 I+II, the authors' own eval file", "PAPER.md §4",
           "Apache-2.0 repo; problems (c) MAA", hub_id="HuggingFaceH4/aime_2024", revision="main",
           hub_mapper="problem_answer", local_files=("klear_reasoner_eval/aime24.qs.jsonl",),
           local_mapper="klear_eval", expected_local=30),
    Source("aime2025", "benchmark", "math", "AIME 2025 I+II, the authors' own eval file", "PAPER.md §4",
           "Apache-2.0 repo; problems (c) MAA", hub_id="MathArena/aime_2025", revision="main",
           hub_mapper="problem_answer", local_files=("klear_reasoner_eval/aime25.qs.jsonl",),
           local_mapper="klear_eval", expected_local=30),
    Source("hmmt2025", "benchmark", "math", "HMMT February 2025, the authors' own eval file", "PAPER.md §4-5",
           "Apache-2.0 repo; problems (c) HMMT; hub copy CC-BY-NC-SA-4.0", hub_id="MathArena/hmmt_feb_2025",
           revision="main", hub_mapper="problem_answer", local_files=("klear_reasoner_eval/HMMT-202502.jsonl",),
           local_mapper="klear_eval", expected_local=30),
    Source("math500", "benchmark", "math", "MATH-500 (PRM800K test subset)", "issue 3 (not in PAPER.md tables)",
           _C, hub_id="HuggingFaceH4/MATH-500", revision="main", hub_split="test", hub_mapper="problem_answer",
           local_files=("math500/test.jsonl",), local_mapper="problem_answer", expected_local=500),
    Source("lcb_v5", "benchmark", "code", "LiveCodeBench 2024-08-01..2025-02-01 (public tests only locally)",
           "PAPER.md §4", "MIT (rLLM) / Apache-2.0 (QwQ); statements (c) AtCoder/LeetCode",
           hub_id="livecodebench/code_generation_lite", revision="main", hub_mapper="lcb_hub",
           local_files=("qwq_eval/livecodebench_v5.jsonl", "livecodebench_v5_rllm_public_tests/livecodebench.json"),
           local_mapper="lcb_local", expected_local=279),
    Source("lcb_v6", "benchmark", "code", "LiveCodeBench 2025-02-01..2025-05-01 (hub only)", "PAPER.md §4",
           "statements (c) AtCoder/LeetCode/Codeforces", hub_id="livecodebench/code_generation_lite",
           revision="main", hub_mapper="lcb_hub"),
    # --- RL training (PAPER.md §2.3, §6) ---
    Source("klear_math_sub30k", "rl_train", "math", "Klear-Reasoner math RL subset (30K of 88K)", "PAPER.md §2.3, §6",
           _M, hub_id="Kwai-Klear/KlearReasoner-MathSub-30K", revision="main", hub_mapper="verl"),
    Source("klear_code_sub15k", "rl_train", "code", "Klear-Reasoner code RL subset (cleaned rLLM data)",
           "PAPER.md §2.3, §6", _M, hub_id="Kwai-Klear/KlearReasoner-CodeSub-15K", revision="main",
           hub_mapper="verl"),
    Source("deepscaler_math", "rl_train", "math", "DeepScaleR MATH-train problems with answers (local stand-in)",
           "PAPER.md §2.3 (DeepScaleR)", _C, local_files=("math_train_deepscaler/math.json",),
           local_mapper="problem_answer", expected_local=7474),
    Source("deepscaler_aime", "rl_train", "math", "DeepScaleR AIME 1983-2023 (local stand-in)",
           "PAPER.md §2.3 (DeepScaleR)", _C, local_files=("math_train_deepscaler/aime.json",),
           local_mapper="problem_answer", expected_local=975),
    Source("rllm_lcb_train", "rl_train", "code", "rLLM older LiveCodeBench problems, public tests (local stand-in)",
           "PAPER.md §2.3 (rllm code data)", _C, local_files=("code_rl_train_rllm/livecodebench.json",),
           local_mapper="rllm_tests", expected_local=580),
    Source("rllm_leetcode", "rl_train", "code", "rLLM LeetCode problems, assert tests (local stand-in)",
           "PAPER.md §2.3 (rllm code data)", _C, local_files=("code_rl_train_rllm/leetcode.json",),
           local_mapper="rllm_leetcode", expected_local=1889),
    # --- SFT prompt sources (PAPER.md §2.2); field names UNVERIFIED ---
    Source("openthoughts3", "sft_prompts", "mixed", "OpenThoughts3-1.2M prompts", "PAPER.md §2.2", "Apache-2.0",
           hub_id="open-thoughts/OpenThoughts3-1.2M", revision="main", hub_mapper="openthoughts"),
    Source("numinamath", "sft_prompts", "math", "NuminaMath-1.5 problems (which NuminaMath: UNVERIFIED)",
           "PAPER.md §2.2", "Apache-2.0", hub_id="AI-MO/NuminaMath-1.5", revision="main", hub_mapper="numina"),
    Source("acereason_1_1_sft", "sft_prompts", "mixed", "AceReason-Nemotron 1.1 SFT prompts", "PAPER.md §2.2",
           "CC-BY-4.0 (UNVERIFIED)", hub_id="nvidia/AceReason-1.1-SFT", revision="main", hub_mapper="acereason"),
    Source("opencodereasoning", "sft_prompts", "code", "OpenCodeReasoning prompts", "PAPER.md §2.2",
           "CC-BY-4.0 (UNVERIFIED)", hub_id="nvidia/OpenCodeReasoning", revision="main", hub_config="split_0",
           hub_split="split_0", hub_mapper="ocr"),
    Source("taco", "sft_prompts", "code", "TACO problems", "PAPER.md §2.2", "Apache-2.0", hub_id="BAAI/TACO",
           revision="main", hub_mapper="taco"),
    Source("apps", "sft_prompts", "code", "APPS problems (script dataset: loadability UNVERIFIED)", "PAPER.md §2.2",
           _C, hub_id="codeparrot/apps", revision="main", hub_mapper="taco"),
    Source("codeforces", "sft_prompts", "code", "open-r1/codeforces problems", "PAPER.md §2.2", "CC-BY-4.0",
           hub_id="open-r1/codeforces", revision="main", hub_mapper="codeforces"),
)}
BENCHMARKS = tuple(n for n, s in SOURCES.items() if s.kind == "benchmark")


def get_source(name: str) -> Source:
    """A source by name; unknown names raise listing the known ones."""
    if name not in SOURCES:
        raise KeyError(f"unknown source {name!r}; known: {sorted(SOURCES)}")
    return SOURCES[name]


def _read(path: Path) -> list:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else [json.loads(ln) for ln in text.splitlines() if ln.strip()]


def lcb_local_records(src: Source) -> list[dict]:
    """Join QwQ's LCB v5 list (ids, dates, prompt) with rLLM's row-aligned public tests."""
    meta, tests = (_read(benchmarks_dir() / f) for f in src.local_files)
    if len(meta) != len(tests):
        raise ValueError(f"{src.name}: {len(meta)} problems vs {len(tests)} test rows; files are not row-aligned")
    return [{**m, "problem": t["problem"], "starter_code": t["starter_code"], "tests": t["tests"]}
            for m, t in zip(meta, tests)]


def map_lcb_local(src, i, r):
    """A joined local LCB v5 record: QwQ's full prompt, rLLM's public tests."""
    return _code(src, i, r["prompt"], _tests_truth(r["tests"], r["starter_code"]),
                 {"question": r["problem"], "question_id": r["question_id"], "contest_date": r["contest_date"][:10]})


MAPPERS["lcb_local"] = map_lcb_local


def local_records(src: Source) -> list[dict]:
    """Raw records of a local source; a source without local files raises naming what is missing."""
    if not src.local_files:
        raise FileNotFoundError(
            f"{src.name}: no local copy in {benchmarks_dir()} (see benchmarks/README.md 'Missing'); "
            f"load it from the hub ({src.hub_id}) with mode='hub' in the full preset")
    if src.local_mapper == "lcb_local":
        return lcb_local_records(src)
    return [rec for f in src.local_files for rec in _read(benchmarks_dir() / f)]


def hub_records(src: Source) -> list[dict]:
    """Raw records from the hub at the pinned revision (network; ``full`` preset only)."""
    from datasets import load_dataset

    if src.hub_mapper == "lcb_hub":
        files = [f"hf://datasets/{src.hub_id}@{src.revision}/{f}" for f in
                 ("test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl")]
        return list(load_dataset("json", data_files=files, split="train"))
    return list(load_dataset(src.hub_id, src.hub_config, split=src.hub_split, revision=src.revision))


def map_records(src: Source, records: list, mapper_name: str) -> tuple[list[dict], cu.Step]:
    """Map raw records; a record the mapper cannot read is dropped as ``unmappable:<field>`` and counted."""
    mapper, rows, dropped = MAPPERS[mapper_name], [], {}
    for i, rec in enumerate(records):
        try:
            rows.append(mapper(src, i, rec))
        except (KeyError, TypeError, IndexError, AttributeError, ValueError, RowError) as err:
            key = f"unmappable:{err.args[0] if isinstance(err, KeyError) else type(err).__name__}"
            dropped[key] = dropped.get(key, 0) + 1
    return rows, cu.Step("map_to_schema", len(records), len(rows), dict(sorted(dropped.items())))


def in_window(row: dict, window: tuple[str, str]) -> bool:
    """True when ``extra_info.contest_date`` lies in ``[start, end)``."""
    date = row["extra_info"].get("contest_date") or ""
    return window[0] <= date < window[1]


def load_source(name: str, mode: str = "local", on_error: str = "drop") -> tuple[list[dict], cu.Funnel]:
    """Rows of source ``name`` in the common schema, and the funnel of what mapping/validation dropped.

    ``on_error="raise"`` raises ``RowError`` (row id + field) on the first invalid row.
    """
    src, funnel = get_source(name), cu.Funnel()
    records = local_records(src) if mode == "local" else hub_records(src)
    rows, step = map_records(src, records, src.local_mapper if mode == "local" else src.hub_mapper)
    funnel.add(name, step)
    if name in LCB_WINDOWS:
        window = LCB_WINDOWS[name]
        rows, step = cu.keep_where(rows, "date_window", lambda r: None if in_window(r, window) else "outside_window",
                                   note=f"[{window[0]}, {window[1]})")
        funnel.add(name, step)
    rows, step = cu.validate_rows(rows, on_error=on_error, require_answer=src.kind != "sft_prompts")
    funnel.add(name, step)
    return rows, funnel


def load_benchmark(name: str, mode: str = "local") -> list[dict]:
    """A benchmark's rows; any malformed row raises (evaluation sets must be complete)."""
    if get_source(name).kind != "benchmark":
        raise KeyError(f"{name!r} is not a benchmark; benchmarks: {BENCHMARKS}")
    return load_source(name, mode, on_error="raise")[0]


def decontam_text(row: dict) -> str:
    """The text decontamination compares: the bare question when known (no prompt boilerplate)."""
    return row["extra_info"].get("question") or row["prompt"][0]["content"]


@functools.lru_cache(maxsize=4)
def benchmark_texts(mode: str = "local", names: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Question texts of every benchmark available in ``mode`` (local: all but LCB v6); cached per process."""
    names = names or tuple(n for n in BENCHMARKS if mode == "hub" or SOURCES[n].local_files)
    return tuple(decontam_text(r) for n in names for r in load_benchmark(n, mode))
