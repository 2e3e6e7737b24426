"""Checks that need the real files of an offline mirror (``make test-real``, ``$KLEAR_BENCHMARKS``): the files
are the registered bytes, every source maps with its real counts, reference answers judge correct, LeetCode
reference programs pass in the sandbox, and the miniature world shares nothing with the real benchmarks."""
from __future__ import annotations

import json
import shutil

import pytest

from klear_lib.configs import get_config, recipe
from klear_lib.data import build_world
from klear_lib.data import curation as cu
from klear_lib.data import sources as S
from klear_lib.data.fetch import mirror_dir, read_records, sha256_file
from klear_lib.data.schema import dumps_rows, validate_rl_row
from klear_lib.evaluation import benchmarks as bm
from klear_lib.evaluation.reference import code_reference_check, leetcode_rows, math_reference_check
from klear_lib.rewards import code as cj
from klear_lib.rewards.judge import row_tests

pytestmark = pytest.mark.real
needs_firejail = pytest.mark.skipif(shutil.which("firejail") is None, reason="firejail is not installed")
COUNTS = {"aime2024": 30, "aime2025": 30, "hmmt2025": 30, "math500": 500, "lcb_v5": 279}
FILES = [f for s in S.SOURCES.values() for f in s.mirror_files]


def _records(path) -> list:
    """Records of one ``.json`` (an array) or ``.jsonl`` file."""
    return [rec for _, rec in read_records(path)]


@pytest.mark.parametrize("f", FILES, ids=[f.path for f in FILES])
def test_mirror_files_are_the_registered_bytes(f):
    assert sha256_file(mirror_dir() / f.path) == f.sha256, f"{f.path} differs from {f.url}"


def test_every_data_file_of_the_mirror_is_registered():
    files = {str(p.relative_to(mirror_dir())) for p in mirror_dir().rglob("*.json*")}
    extra = files - {f.path for f in FILES}
    assert extra <= {"qwq_eval/aime24.jsonl", "qwq_eval/aime25.jsonl", "aime2024_qwen25math/test.jsonl"}, extra
    for rel in ("qwq_eval/aime24.jsonl", "aime2024_qwen25math/test.jsonl"):  # other copies of AIME 2024
        assert len(_records(mirror_dir() / rel)) == 30


@pytest.mark.parametrize("name", [n for n, s in S.SOURCES.items() if s.mirror_files])
def test_sources_map_with_their_real_counts(name):
    records, _, where = S.raw_records(S.SOURCES[name], "mirror")
    assert where == "mirror" and len(records) == S.SOURCES[name].mirror_rows
    rows, funnel = S.load_source(name, "mirror")
    assert funnel.steps[0][1].rows_in == len(records)
    if name in COUNTS:
        assert len(rows) == COUNTS[name] and len({r["extra_info"]["id"] for r in rows}) == len(rows)
        for r in rows:
            validate_rl_row(r)


def test_benchmark_answers_and_tests():
    aime24 = S.load_benchmark("aime2024")
    assert all(r["reward_model"]["ground_truth"].isdigit() for r in aime24)
    assert sorted(int(r["reward_model"]["ground_truth"]) for r in aime24)[:3] == [23, 25, 33]
    lcb = S.load_benchmark("lcb_v5")
    kinds = [json.loads(r["reward_model"]["ground_truth"])["testtype"] for r in lcb]
    assert kinds.count("stdin") == 175 and kinds.count("functional") == 104
    assert all(S.in_window(r, S.LCB_WINDOWS["lcb_v5"], undated="outside") for r in lcb)
    assert all(r["prompt"][0]["content"].startswith("You will be given a question") for r in lcb)
    assert all(len(row_tests(r)) >= 1 for r in lcb)
    texts = S.benchmark_texts("mirror")
    assert len(texts) == sum(COUNTS.values())
    assert not any(t.startswith("You will be given a question") for t in texts)


@pytest.mark.parametrize("name,n", [("aime24", 30), ("aime25", 30), ("hmmt25", 30), ("math500", 500)])
def test_eval_rows_load_in_the_verl_schema(name, n):
    rows = bm.load_rows(name, recipe("tiny"))
    assert len(rows) == n and all(r["ability"] == "math" and r["reward_model"]["ground_truth"] for r in rows)


@pytest.mark.parametrize("name", ["aime24", "aime25", "hmmt25"])
def test_reference_answers_judge_correct_and_shuffled_wrong(name):
    df = math_reference_check(name, recipe("tiny"))
    assert df["reference_correct"].all() and not df["shuffled_correct"].any()


def test_math500_reference_answers_all_judge_correct():
    df = math_reference_check("math500", recipe("tiny"))
    assert df["reference_correct"].all()
    passed = df[df["shuffled_correct"]]  # a shuffled answer may equal the real one: only those may pass
    assert len(passed) <= 5 and (passed["answer"] == passed["shuffled_answer"]).all()


def test_no_real_benchmark_item_survives_decontamination():
    texts = S.benchmark_texts("mirror")
    planted = [{"prompt": [{"role": "user", "content": "Solve this: " + S.decontam_text(r) + " Think step by step."}],
                "extra_info": {"id": "planted"}} for n in COUNTS for r in S.load_benchmark(n)[::7]]
    clean = [{"prompt": [{"role": "user", "content": f"Compute {a}*{b}."}], "extra_info": {"id": f"{a}-{b}"}}
             for a in range(10, 30) for b in range(2, 5)]
    kept, step = cu.decontaminate(planted + clean, texts, n=9, boilerplate_df=3)
    assert all(r["extra_info"]["id"] != "planted" for r in kept) and len(kept) == len(clean)
    assert step.dropped == {"contaminated": len(planted)}


@pytest.mark.parametrize("preset", ["ci", pytest.param("tiny", marks=pytest.mark.slow)])
def test_the_miniature_world_shares_nothing_with_the_real_benchmarks(preset):
    """Why a clone without the mirror builds the same world: decontaminating against the real benchmarks drops
    no row (ci ~3 s, tiny ~25 s)."""
    with_real = build_world(get_config("data", preset))
    without = build_world(get_config("data", preset, decontam_real=False))
    rows = lambda world: {k: dumps_rows(v) for k, v in world.splits.items()}  # noqa: E731
    assert rows(with_real) == rows(without)
    assert with_real.funnel.records() == without.funnel.records()


@pytest.mark.slow
def test_mirror_real_world():
    """~20 s: math-verify parses every DeepScaleR answer."""
    world = build_world(get_config("data", "full", source="mirror"))
    assert {k: len(v) for k, v in world.splits.items() if k in S.BENCHMARKS} == COUNTS
    steps = {(p, s.stage): s for p, s in world.funnel.steps}
    # literal 9-gram rule: template phrases shared with MATH-500/AIME/LCB drop ~11% of math, ~28% of code
    assert 7000 < len(world.splits["math_rl"]) < 8148 == steps[("math_rl", "exact_dedup")].rows_out
    assert world.splits["code_rl"] == []  # <= 6 public tests per rLLM LCB problem; LeetCode asserts < 16
    assert steps[("code_rl", "min_tests")].dropped["too_few_tests"] > 1000


def _respond(code: str) -> str:
    return f"<think>\nx\n</think>\n```python\n{code}\n```"


@needs_firejail
def test_call_based_livecodebench_tests():
    rows = _records(mirror_dir() / "code_rl_train_rllm" / "livecodebench.json")
    row = next(r for r in rows if "countSeniors" in r["starter_code"])
    tests = cj.parse_rllm_tests(row["tests"], row["starter_code"])
    good = ("class Solution:\n    def countSeniors(self, details: List[str]) -> int:\n"
            "        return sum(int(d[11:13]) > 60 for d in details)")
    assert cj.code_reward(_respond(good), tests) == 1.0
    assert cj.code_reward(_respond(good.replace("> 60", ">= 0")), tests) == -1.0


@needs_firejail
def test_leetcode_assert_tests():
    rows = _records(mirror_dir() / "code_rl_train_rllm" / "leetcode.json")
    tests = cj.parse_tests({"functional": rows[0]["tests"]["functional"]})
    assert cj.code_reward(_respond(rows[0]["solutions"]), tests) == 1.0
    bad = "class Solution:\n    def twoSum(self, nums, target):\n        return [0, 0]"
    assert cj.code_reward(_respond(bad), tests) == -1.0


@needs_firejail
def test_leetcode_reference_solutions_pass_on_a_sample():
    rows, programs = leetcode_rows(40)
    df = code_reference_check(rows, programs)
    assert df["passed"].all(), df[~df["passed"]].to_dict("records")


@needs_firejail
@pytest.mark.slow
def test_all_leetcode_reference_solutions_pass():
    rows, programs = leetcode_rows()
    df = code_reference_check(rows, programs)
    assert df["passed"].mean() >= 0.99, df[~df["passed"]].to_dict("records")


@pytest.mark.parametrize("name", ["aime2024", "aime2025", "lcb_v5", "klear_code_sub15k"])
def test_committed_cards_match_regeneration(tmp_path, name):
    from klear_lib.data.cards import write_source_cards
    from klear_lib.paths import DATA_CARDS

    committed = DATA_CARDS / f"source_{name}.md"
    (fresh,) = write_source_cards(tmp_path, [name])
    assert fresh.read_text() == committed.read_text(), f"{committed} is stale: re-run notebook 01 at tiny"

