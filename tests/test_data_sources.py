"""Real-source loaders on fixture files in each source's real schema (``tests/fake_mirror.py``) and on fake hub
rows: every mapper, the mirror/hub/git resolution, clear errors when a source is found nowhere, counted drops.
The same checks on the real files are in ``test_real_data.py`` (``make test-real``)."""
from __future__ import annotations

import json
import re

import fake_mirror
import pytest

from klear_lib.configs import recipe
from klear_lib.data import fetch
from klear_lib.data import sources as S
from klear_lib.data.schema import RowError, validate_rl_row

FIXTURE_ROWS = fake_mirror.PROBLEMS  # the fixture's benchmark sizes (lcb_v5: 1 record off-window)


@pytest.mark.parametrize("name, n", sorted(FIXTURE_ROWS.items()))
def test_benchmarks_map_from_the_mirror(fake_mirror, name, n):
    rows = S.load_benchmark(name)
    assert len(rows) == n and len({r["extra_info"]["id"] for r in rows}) == n
    for r in rows:
        validate_rl_row(r)
        assert r["extra_info"]["split"] == "benchmark" and r["data_source"] == name


def test_benchmark_answers_tests_and_windows(fake_mirror):
    assert [r["reward_model"]["ground_truth"] for r in S.load_benchmark("aime2024")] == ["5", "24", "15"]
    assert S.load_benchmark("hmmt2025")[-1]["reward_model"]["ground_truth"] == "\\frac{5}{6}"
    lcb = S.load_benchmark("lcb_v5")
    truths = [json.loads(r["reward_model"]["ground_truth"]) for r in lcb]
    assert [t["testtype"] for t in truths] == ["stdin", "functional"] and truths[1]["fn_name"] == "total"
    assert all(S.in_window(r, S.LCB_WINDOWS["lcb_v5"], undated="outside") for r in lcb)
    assert lcb[0]["extra_info"]["question"] == "Read n and print its square."  # rLLM text joined to QwQ's row
    from klear_lib.rewards.code import parse_tests  # the sandbox reads our ground truth

    assert all(parse_tests(r["reward_model"]["ground_truth"]) for r in lcb)
    _, funnel = S.load_source("lcb_v5")
    steps = {s.stage: s for _, s in funnel.steps}
    assert steps["date_window"].dropped == {"outside_window": 1} and steps["map_to_schema"].note == "from mirror"


@pytest.mark.parametrize("name, n, dropped", [
    ("rllm_lcb_train", 3, {"unmappable:prompt": 1}), ("rllm_leetcode", 1, {"unmappable:tests.functional": 1}),
    ("deepscaler_aime", 3, {}), ("deepscaler_math", 3, {"invalid:reward_model.ground_truth": 1})])
def test_training_sources_count_what_they_drop(fake_mirror, name, n, dropped):
    rows, funnel = S.load_source(name)
    assert len(rows) == n
    assert {k: v for _, s in funnel.steps for k, v in s.dropped.items()} == dropped


def test_every_mirror_file_is_registered_once():
    paths = [f.path for s in S.SOURCES.values() for f in s.mirror_files]
    assert len(paths) == len(set(paths))
    for f in (f for s in S.SOURCES.values() for f in s.mirror_files):
        assert re.fullmatch(r"[0-9a-f]{40}", f.commit) and re.fullmatch(r"[0-9a-f]{64}", f.sha256), f.path
        assert f.url.startswith("https://raw.githubusercontent.com/") and f.commit in f.url


def test_every_source_has_a_home_and_a_pin_or_a_reason():
    for src in S.SOURCES.values():
        assert src.hub_id or src.mirror_files, src.name
        if src.hub_id:
            assert src.revision is None or re.fullmatch(r"[0-9a-f]{40}", src.revision), src.name
            assert src.revision_note, f"{src.name}: say where the revision was checked, or why it is UNVERIFIED"
            if src.revision is None:
                assert src.revision_note.startswith("UNVERIFIED"), src.name
        assert {m for m in (src.hub_mapper, src.mirror_mapper) if m} <= set(S.MAPPERS), src.name


def test_without_a_mirror_or_network_the_error_names_everything(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(S.SourceUnavailable) as err:
        S.load_benchmark("aime2024")
    msg = str(err.value)
    for part in ("aime2024", "HuggingFaceH4/aime_2024", S.SOURCES["aime2024"].revision, "KLEAR_BENCHMARKS",
                 "klear_reasoner_eval/aime24.qs.jsonl"):
        assert part in msg, part
    assert err.value.reason == "HF_HUB_OFFLINE is set"
    with pytest.raises(S.SourceUnavailable, match="deepscaler_math.*agentica-project/deepscaler@95ef74ffee00"):
        S.load_source("deepscaler_math")


def test_no_network_is_detected_quickly(monkeypatch):
    """Without a network the hub client would retry for ~30 s per source: one short TCP probe decides."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(fetch, "reachable", lambda url, timeout_s=3.0: False)
    with pytest.raises(S.SourceUnavailable, match=r"\(no network\)"):
        S.load_benchmark("math500")
    assert S.try_load_benchmark("math500") == (None, "skipped: no network")


def test_mirror_mode_and_bad_mirror(fake_mirror, monkeypatch, tmp_path):
    with pytest.raises(S.SourceUnavailable, match="no mirror layout: hub only"):
        S.load_benchmark("lcb_v6", "mirror")
    monkeypatch.setenv("KLEAR_BENCHMARKS", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="KLEAR_BENCHMARKS=.*nowhere is not a folder"):
        S.load_benchmark("aime2024")
    monkeypatch.setenv("KLEAR_BENCHMARKS", "")
    with pytest.raises(S.SourceUnavailable, match="KLEAR_BENCHMARKS is unset"):
        S.load_benchmark("aime2024", "mirror")
    assert recipe("tiny").study.real_data == recipe("ci").study.real_data == "mirror"
    assert recipe("full").study.real_data == "auto"


def test_a_partial_mirror_falls_back_to_the_network(fake_mirror, monkeypatch, tmp_path):
    (tmp_path / "mirror" / "math500" / "test.jsonl").unlink()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert S.try_load_benchmark("math500") == (None, "skipped: HF_HUB_OFFLINE is set")
    assert len(S.load_benchmark("aime2024")) == 3


def test_hub_records_read_the_pinned_revision(monkeypatch):
    calls = []

    def fake_load(path, config=None, split=None, revision=None, data_files=None):
        calls.append((path, config, split, revision, data_files))
        return [{"problem": "Compute $2+2$.", "answer": "4"}]


    monkeypatch.setattr(fetch, "load_dataset", fake_load)
    monkeypatch.setattr(fetch, "reachable", lambda url, timeout_s=3.0: True)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    rows, funnel = S.load_source("math500", "hub")
    assert len(rows) == 1 and calls[-1] == ("HuggingFaceH4/MATH-500", None, "test", S.SOURCES["math500"].revision,
                                            None)
    assert funnel.steps[0][1].note == "from hub"
    S.raw_records(S.SOURCES["apps"], "hub")
    rev = S.SOURCES["apps"].revision
    assert calls[-1] == ("json", None, "train", None, [f"hf://datasets/codeparrot/apps@{rev}/train.jsonl"])


def test_git_files_are_checked_against_their_sha256(monkeypatch, tmp_path):
    fake = tmp_path / "aime.json"
    fake.write_text("[]")

    monkeypatch.setattr(fetch, "cached_path", lambda url, download_config=None: str(fake))
    monkeypatch.setattr(fetch, "reachable", lambda url, timeout_s=3.0: True)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(ValueError, match="deepscaler_aime: https://raw.githubusercontent.com/.*has sha256"):
        S.load_source("deepscaler_aime")


def test_hub_mappers_on_fake_rows():
    src = S.SOURCES["hmmt2025"]
    row = S.MAPPERS["problem_answer"](src, 0, {"problem": "Compute $x$.", "answer": "\\frac{1}{2}", "problem_idx": 1})
    assert validate_rl_row(row)["reward_model"]["ground_truth"] == "\\frac{1}{2}"
    lcb = {"question_content": "Print 1.", "question_id": "abc1", "contest_date": "2025-03-01T00:00:00",
           "platform": "atcoder", "starter_code": "", "metadata": "{}",
           "public_test_cases": json.dumps([{"input": "\n", "output": "1\n", "testtype": "stdin"}])}
    row = S.MAPPERS["lcb_hub"](S.SOURCES["lcb_v6"], 0, lcb)
    assert validate_rl_row(row) and S.in_window(row, S.LCB_WINDOWS["lcb_v6"], undated="outside")
    assert not S.in_window(row, S.LCB_WINDOWS["lcb_v5"], undated="outside")
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


def test_misaligned_lcb_files_raise_naming_both(fake_mirror, tmp_path):
    path = tmp_path / "mirror" / "livecodebench_v5_rllm_public_tests" / "livecodebench.json"
    path.write_text(json.dumps(json.loads(path.read_text())[:2]))
    with pytest.raises(ValueError, match="livecodebench_v5.jsonl: 3 problems vs 2 test rows in .*livecodebench.json"):
        S.load_benchmark("lcb_v5")


def test_benchmark_texts_use_the_bare_question_and_skip_what_is_missing(fake_mirror, monkeypatch, caplog):
    texts = S.benchmark_texts()
    assert len(texts) == sum(FIXTURE_ROWS.values())  # lcb_v6 (hub only) is skipped offline
    assert not any(t.startswith("You will be given a question") for t in texts)
    monkeypatch.setenv("KLEAR_BENCHMARKS", "")
    assert S.benchmark_texts("mirror") == ()
    assert "left out of decontamination" in caplog.text


HUB_SOURCES = sorted(n for n, s in S.SOURCES.items() if s.hub_id)


def test_every_hub_source_has_a_fixture_layout():
    import fake_hub

    assert set(fake_hub.RECORDS) == set(HUB_SOURCES)


@pytest.mark.parametrize("name", HUB_SOURCES)
def test_hub_layouts_map_to_valid_rows(name):
    """One record (or two, with a bad one) in each hub dataset's column layout, through its registered mapper."""
    import fake_hub

    from klear_lib.data.curation import validate_rows

    src = S.SOURCES[name]
    rows, step = S.map_records(src, fake_hub.RECORDS[name], src.hub_mapper)
    kept, vstep = validate_rows(rows, require_answer=src.kind != "sft_prompts")
    assert len(kept) == fake_hub.KEPT[name], (step.dropped, vstep.dropped)
    assert all(r["data_source"] == name and r["extra_info"]["split"] == src.kind for r in kept)
    if name in S.LCB_WINDOWS:
        assert all(S.in_window(r, S.LCB_WINDOWS[name], undated="outside") for r in kept)
    if src.kind == "benchmark" and src.ability == "math":
        assert [r["reward_model"]["ground_truth"] for r in kept][0] in ("040", "40", "\\frac{5}{6}")


# ---- loaders that keep their word: malformed benchmark records raise naming the file, line and field ----------
def _rewrite_line(path, line: int, text: str | bytes) -> None:
    """Replace 1-based ``line`` of a JSONL file with ``text`` (bytes are written raw)."""
    lines = path.read_bytes().split(b"\n")
    lines[line - 1] = text if isinstance(text, bytes) else text.encode()
    path.write_bytes(b"\n".join(lines))


BAD_RECORDS = [  # (benchmark, mirror file, 1-based line, replacement record, field named, where it is named)
    ("aime2024", "klear_reasoner_eval/aime24.qs.jsonl", 2, {"messages": [], "answer": "1"}, "messages.0.content",
     "line 2"),
    ("aime2025", "klear_reasoner_eval/aime25.qs.jsonl", 3, {"messages": [{"role": "user", "content": "  "}],
                                                            "meta": {"answer": "3"}}, "prompt", "line 3"),
    ("hmmt2025", "klear_reasoner_eval/HMMT-202502.jsonl", 1, ["not", "an", "object"], "<record>", "line 1"),
    ("math500", "math500/test.jsonl", 2, {"problem": "What is $1+1$?"}, "reward_model.ground_truth", "line 2"),
    ("math500", "math500/test.jsonl", 3, {"problem": "What is $1+1$?", "answer": "???"}, "reward_model.ground_truth",
     "line 3"),
]


@pytest.mark.parametrize("name, rel, line, record, field, where", BAD_RECORDS)
def test_a_malformed_benchmark_record_raises_naming_file_line_and_field(fake_mirror, tmp_path, name, rel, line,
                                                                        record, field, where):
    _rewrite_line(tmp_path / "mirror" / rel, line, json.dumps(record))
    with pytest.raises(RowError, match=rf"{re.escape(rel)}: {where}: field '{re.escape(field)}': "):
        S.load_benchmark(name)
    _, funnel = S.load_source(name)  # a training-style load still drops and counts it
    assert sum(s.rows_in - s.rows_out for _, s in funnel.steps) == 1


def test_a_malformed_lcb_record_names_both_joined_files(fake_mirror, tmp_path):
    path = tmp_path / "mirror" / "livecodebench_v5_rllm_public_tests" / "livecodebench.json"
    tests = json.loads(path.read_text())
    tests[1]["tests"] = [{"input": "[1]"}]  # no output
    path.write_text(json.dumps(tests))
    with pytest.raises(RowError, match=r"livecodebench_v5.jsonl: line 2 and .*livecodebench.json: record 2: "
                                       r"field 'tests': "):
        S.load_benchmark("lcb_v5")
    path.write_text(json.dumps(fake_mirror["livecodebench_v5_rllm_public_tests/livecodebench.json"]))  # restored
    meta = tmp_path / "mirror" / "qwq_eval" / "livecodebench_v5.jsonl"
    record = json.loads(meta.read_text().splitlines()[0])
    _rewrite_line(meta, 1, json.dumps({k: v for k, v in record.items() if k != "contest_date"}))
    with pytest.raises(RowError, match=r"livecodebench_v5.jsonl: line 1 and .*: field 'contest_date': "):
        S.load_benchmark("lcb_v5")  # without a date the window cannot place it: never dropped silently


@pytest.mark.parametrize("text, message", [
    (b'{"messages": [{"role": "user", "content": "Compute $2+2$."}], "answer": "4"', "line 2: invalid JSON"),
    (b'{"messages": [{"role": "user", "content": "Caf\xe9 $2+2$."}], "answer": "4"}', "line 2: not UTF-8"),
])
def test_json_and_utf8_errors_name_the_file_and_line(fake_mirror, tmp_path, text, message):
    _rewrite_line(tmp_path / "mirror" / "klear_reasoner_eval" / "aime24.qs.jsonl", 2, text)
    with pytest.raises(ValueError, match=rf"klear_reasoner_eval/aime24.qs.jsonl: {message}"):
        S.load_benchmark("aime2024")
    with pytest.raises(ValueError, match=rf"aime24.qs.jsonl: {message}"):
        S.load_source("aime2024")  # a file that cannot be read is never a counted drop
    path = tmp_path / "mirror" / "livecodebench_v5_rllm_public_tests" / "livecodebench.json"
    path.write_text(path.read_text().replace("}, {", "},\n {", 1)[:-5])  # cut: the array never closes
    with pytest.raises(ValueError, match=r"livecodebench_v5_rllm_public_tests/livecodebench.json: line 2: invalid"):
        S.load_benchmark("lcb_v5")


def test_the_registry_holds_each_benchmark_size_once():
    """AIME 2024/2025 and HMMT Feb 2025 have 30 problems, MATH-500 500, LCB v5 279 (counted in the offline mirror)."""
    assert {n: S.SOURCES[n].problems for n in S.BENCHMARKS} == {
        "aime2024": 30, "aime2025": 30, "hmmt2025": 30, "math500": 500, "lcb_v5": 279, "lcb_v6": None}
    for name in S.BENCHMARKS:  # the file and hub counts agree with it wherever the registry gives them
        src = S.SOURCES[name]
        assert {src.hub_rows, src.mirror_rows} - {None} <= {src.problems}, name


def test_a_benchmark_with_missing_problems_raises(tmp_path, monkeypatch):
    """20 of AIME 2024's 30 problems: the registry's size is checked, not the fixture's."""
    fake_mirror.write(tmp_path)
    monkeypatch.setenv("KLEAR_BENCHMARKS", str(tmp_path))
    rows = [{"messages": [{"role": "user", "content": f"Compute ${k}+{k}$ in this invented problem."}],
             "answer": str(2 * k)} for k in range(20)]
    (tmp_path / "klear_reasoner_eval" / "aime24.qs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"aime2024: 20 problems in .*/aime24.qs.jsonl, expected 30"):
        S.load_benchmark("aime2024")
    assert len(S.load_source("aime2024")[0]) == 20  # the drop-policy loader (data cards) reports what is there


def test_a_fixture_benchmark_one_short_raises(fake_mirror, tmp_path):
    path = tmp_path / "mirror" / "math500" / "test.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(ValueError, match=r"math500: 2 problems in .*math500/test.jsonl, expected 3"):
        S.load_benchmark("math500")


def test_the_window_drop_is_counted_and_logged(fake_mirror, caplog):
    caplog.set_level("INFO", logger=S.__name__)
    assert len(S.load_benchmark("lcb_v5")) == 2
    assert "lcb_v5: 1 of 3 records lie outside [2024-08-01, 2025-02-01)" in caplog.text


def test_a_malformed_hub_record_names_the_dataset_and_row(monkeypatch):
    recs = [{"problem": "Compute $2+2$.", "answer": "4"}, {"problem": "Compute $3+3$.", "answer": ["6"]}]
    monkeypatch.setattr(S, "hub_records", lambda src: recs)
    rev = S.SOURCES["math500"].revision[:12]
    with pytest.raises(RowError, match=rf"hub HuggingFaceH4/MATH-500@{rev}: row 2: field 'reward_model.ground_truth'"):
        S.load_benchmark("math500", "hub")
    monkeypatch.setattr(S, "hub_records", lambda src: recs[:1])
    with pytest.raises(ValueError, match=rf"math500: 1 problems in hub HuggingFaceH4/MATH-500@{rev}, expected 500"):
        S.load_benchmark("math500", "hub")
