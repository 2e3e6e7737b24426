"""Real-source loaders: every local benchmark file into the common schema with the right counts; hub mappers on
fake rows (no network); malformed records are counted, not silently kept."""
from __future__ import annotations

import json

import pytest

from klear_lib.data import sources as S
from klear_lib.data.schema import RowError, validate_rl_row

COUNTS = {"aime2024": 30, "aime2025": 30, "hmmt2025": 30, "math500": 500, "lcb_v5": 279}


@pytest.mark.parametrize("name, n", sorted(COUNTS.items()))
def test_local_benchmarks_load_with_the_right_counts(name, n):
    rows = S.load_benchmark(name, "local")
    assert len(rows) == n == S.SOURCES[name].expected_local
    assert len({r["extra_info"]["id"] for r in rows}) == n
    for r in rows:
        validate_rl_row(r)
        assert r["extra_info"]["split"] == "benchmark" and r["data_source"] == name


def test_benchmark_answers_and_tests():
    aime24 = S.load_benchmark("aime2024")
    assert all(r["reward_model"]["ground_truth"].isdigit() for r in aime24)
    assert sorted(int(r["reward_model"]["ground_truth"]) for r in aime24)[:3] == [23, 25, 33]
    lcb = S.load_benchmark("lcb_v5")
    kinds = [json.loads(r["reward_model"]["ground_truth"])["testtype"] for r in lcb]
    assert kinds.count("stdin") == 175 and kinds.count("functional") == 104
    assert all(S.in_window(r, S.LCB_WINDOWS["lcb_v5"]) for r in lcb)
    assert all(r["prompt"][0]["content"].startswith("You will be given a question") for r in lcb)
    from klear_lib.rewards.code import parse_tests  # the sandbox reads our ground truth

    assert all(parse_tests(r["reward_model"]["ground_truth"]) for r in lcb)


def test_every_local_file_is_read():
    """Every data file under shared/benchmarks belongs to one registered local source."""
    from klear_lib.paths import benchmarks_dir

    files = {str(p.relative_to(benchmarks_dir())) for p in benchmarks_dir().rglob("*.json*")}
    used = {f for s in S.SOURCES.values() for f in s.local_files}
    assert files - used <= {"qwq_eval/aime24.jsonl", "qwq_eval/aime25.jsonl", "aime2024_qwen25math/test.jsonl"}
    for extra in ("qwq_eval/aime24.jsonl", "aime2024_qwen25math/test.jsonl"):
        rows = S._read(benchmarks_dir() / extra)
        assert len(rows) == 30  # duplicates of the authors' AIME 2024 file, same answers


@pytest.mark.parametrize("name, n", [("rllm_lcb_train", 580), ("rllm_leetcode", 1889), ("deepscaler_aime", 975)])
def test_local_training_sources(name, n):
    rows, funnel = S.load_source(name, "local")
    assert len(rows) == n and funnel.steps[0][1].rows_in == n


def test_lcb_v6_local_raises_naming_what_is_missing():
    with pytest.raises(FileNotFoundError, match="lcb_v6.*no local copy.*livecodebench/code_generation_lite"):
        S.load_benchmark("lcb_v6", "local")


def test_hub_sources_are_pinned():
    for src in S.SOURCES.values():
        assert src.hub_id is None or src.revision, src.name
        assert src.local_files or src.hub_id, src.name


def test_hub_mappers_on_fake_rows():
    src = S.SOURCES["hmmt2025"]
    row = S.MAPPERS["problem_answer"](src, 0, {"problem": "Compute $x$.", "answer": "\\frac{1}{2}", "problem_idx": 1})
    assert validate_rl_row(row)["reward_model"]["ground_truth"] == "\\frac{1}{2}"
    lcb = {"question_content": "Print 1.", "question_id": "abc1", "contest_date": "2025-03-01T00:00:00",
           "platform": "atcoder", "starter_code": "", "metadata": "{}",
           "public_test_cases": json.dumps([{"input": "\n", "output": "1\n", "testtype": "stdin"}])}
    row = S.MAPPERS["lcb_hub"](S.SOURCES["lcb_v6"], 0, lcb)
    assert validate_rl_row(row) and S.in_window(row, S.LCB_WINDOWS["lcb_v6"])
    assert not S.in_window(row, S.LCB_WINDOWS["lcb_v5"])
    verl = {"data_source": "math_longcot_math_verify", "prompt": [{"role": "user", "content": "1+1?"}],
            "ability": "math", "reward_model": {"ground_truth": "2", "style": "rule"}}
    assert validate_rl_row(S.MAPPERS["verl"](S.SOURCES["klear_math_sub30k"], 0, verl))
    ot = S.MAPPERS["openthoughts"](S.SOURCES["openthoughts3"], 0,
                                   {"domain": "code", "conversations": [{"from": "human", "value": "Write x."}]})
    assert ot["ability"] == "code" and ot["reward_model"]["style"] == "none"


def test_malformed_records_are_counted_or_raise():
    src = S.SOURCES["math500"]
    recs = [{"problem": "Ok $1+1$?", "answer": "2"}, {"problem": "No answer"}, {"answer": "3"},
            {"problem": 17, "answer": "1"}, {"problem": "Bad answer", "answer": "???"}]
    rows, step = S.map_records(src, recs, "problem_answer")
    assert len(rows) == 3 and step.dropped == {"unmappable:prompt": 2}
    with pytest.raises(RowError, match="reward_model.ground_truth"):
        validate_rl_row(rows[1])
    from klear_lib.data.curation import validate_rows

    kept, vstep = validate_rows(rows)
    assert len(kept) == 1 and vstep.dropped == {"invalid:reward_model.ground_truth": 2}


def test_benchmark_texts_use_the_bare_question():
    texts = S.benchmark_texts("local")
    assert len(texts) == sum(COUNTS.values())
    assert not any(t.startswith("You will be given a question") for t in texts)
