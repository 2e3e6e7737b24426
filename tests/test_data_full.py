"""The full build command (``python -m klear_lib.data.full.build``): the RL training files and SFT prompts from the
released sets, through the kit's curation, with a funnel, a manifest and a data card. Hub records are invented
here in each dataset's layout (no network); the mirror path runs on ``tests/fake_mirror.py``'s files."""
from __future__ import annotations

import json

import pytest
from datasets import load_dataset

from klear_lib.data import sources as S
from klear_lib.data.fetch import SourceUnavailable
from klear_lib.data.full import build
from klear_lib.training.rl_rows import validate_rl_rows

LEAK = "Find the number of ordered pairs of positive integers whose product equals the sum of their squares plus 7."
TESTS16 = json.dumps({"inputs": ["1\n"] * 16, "outputs": ["1\n"] * 16})


def _verl(prompt: str, truth: str, ability: str = "math") -> dict:
    return {"prompt": [{"role": "user", "content": prompt}], "ability": ability, "data_source": "x",
            "reward_model": {"ground_truth": truth, "style": "rule"}}


SFT = {  # each SFT source's own column layout (tests/fake_hub.py), with one leak and one copy across sources
    "openthoughts3": [{"domain": "math", "conversations": [{"from": "human", "value": "Sum the first 50 odd numbers "
                                                            "and explain each step of the reasoning."}]},
                      {"domain": "science", "conversations": [{"from": "human", "value": "Why is the sky blue?"}]}],
    "numinamath": [{"problem": f"aime2024: {LEAK}"}, {"problem": "Sum the first 50 odd numbers and explain each step "
                                                                 "of the reasoning."}],
    "acereason_1_1_sft": [{"input": "Prove that the square root of two is irrational.", "category": "math"}],
    "opencodereasoning": [{"input": "Write a program that reverses a string read from standard input."}],
    "taco": [{"question": "Read a list of integers and print their running maximum."}],
    "apps": [{"question": "Given a grid of letters, count the islands of the letter X."}],
    "codeforces": [{"description": "Print the number of distinct prime factors of n."}],
}


def _fake_hub(src):
    if src.kind == "sft_prompts":
        return SFT[src.name]
    if src.hub_mapper == "lcb_hub":
        date = "2025-03-01T00:00:00" if src.name == "lcb_v6" else "2024-09-01T00:00:00"
        tests = json.dumps([{"input": "1\n", "output": "1\n", "testtype": "stdin"}])
        return [{"question_content": f"{src.name}: print the input back, unchanged, for every test case given.",
                 "question_id": "q1", "contest_date": date, "platform": "atcoder", "starter_code": "",
                 "metadata": "{}", "public_test_cases": tests}]
    if src.kind == "benchmark":
        return [{"problem": f"{src.name}: {LEAK}", "answer": "7"}]
    if src.name == "klear_math_sub30k":
        ok = _verl("What is 2+2?", "4")
        return [_verl(f"aime2024: {LEAK}", "7"), ok, ok, _verl("What is 3+3?", "")]
    if src.name == "klear_code_sub15k":
        return [_verl("Echo the number.", TESTS16, "code"),
                _verl("Echo twice.", json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]}), "code")]
    raise AssertionError(f"unexpected hub load {src.name}")


@pytest.fixture
def fake_hub(monkeypatch):
    import fake_mirror

    monkeypatch.setattr(S, "hub_records", _fake_hub)
    fake_mirror.expect(monkeypatch, dict.fromkeys(("aime2024", "aime2025", "hmmt2025", "math500", "lcb_v5"), 1))


def _drops(info_dir) -> dict:
    lines = (info_dir / "funnel.csv").read_text().splitlines()[1:]
    return {(ln.split(",")[0], ln.split(",")[2]): ln.split(",")[6] for ln in lines if ln.split(",")[5] != "0"}


def test_the_hub_build_writes_training_files_the_trainers_read(tmp_path, fake_hub):
    info = build.run(tmp_path, "hub")
    assert {name: f["rows"] for name, f in info["files"].items()} == {
        "math_rl.parquet": 1, "code_rl.parquet": 1, "sft_prompts.jsonl": 6}
    for split, reward in (("math_rl", "math"), ("code_rl", "code")):  # as gppo_trainer.main reads TRAIN_FILE
        rows = load_dataset("parquet", data_files=str(tmp_path / f"{split}.parquet"), split="train").to_list()
        assert len(validate_rl_rows(rows, reward)) == 1
    assert rows[0]["prompt"][0]["content"] == "Echo the number."
    prompts = [json.loads(ln) for ln in (tmp_path / "sft_prompts.jsonl").read_text().splitlines()]
    assert {p["data_source"] for p in prompts} == set(build.SFT_SOURCES) - {"numinamath"}  # its 2 rows: leak, copy
    assert _drops(tmp_path) == {
        ("math_rl:klear_math_sub30k", "validate"): "invalid:reward_model.ground_truth=1",
        ("math_rl", "exact_dedup"): "duplicate=1", ("math_rl", "decontaminate_9gram"): "contaminated=1",
        ("code_rl", "min_tests"): "too_few_tests=1", ("sft_prompts:openthoughts3", "validate"): "invalid:ability=1",
        ("sft_prompts", "exact_dedup"): "duplicate=1", ("sft_prompts", "decontaminate_9gram"): "contaminated=1"}
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["files"]["code_rl.parquet"]["sha256"] == build.sha256_file(tmp_path / "code_rl.parquet")
    assert manifest["sources"]["klear_math_sub30k"]["revision"] == S.SOURCES["klear_math_sub30k"].revision
    card = (tmp_path / "README.md").read_text()
    assert "| sft_prompts | decontaminate_9gram | contaminated | 1 |" in card
    assert "Kwai-Klear/KlearReasoner-MathSub-30K@972d1bd91843936551f0ee2bc2bd5ea259c9397f" in card
    assert "at least 16 tests." in card


def test_the_mirror_build_stops_on_an_empty_split_after_saying_why(tmp_path, fake_mirror):
    """The fixture's math RL rows all repeat its benchmark problems, and its code sets have 1-3 tests."""
    with pytest.raises(ValueError, match="^math_rl, code_rl: every row was dropped .*README.md"):
        build.run(tmp_path / "strict", "mirror")
    assert not list((tmp_path / "strict").glob("*.parquet"))
    card = (tmp_path / "strict" / "README.md").read_text()
    assert "| code_rl | min_tests | too_few_tests | 1 |" in card and "| math_rl | decontaminate_9gram |" in card
    with pytest.raises(ValueError, match="^math_rl: every row was dropped"):
        build.run(tmp_path / "loose", "mirror", min_code_tests=1)
    manifest = json.loads((tmp_path / "loose" / "manifest.json").read_text())
    assert manifest["files"] == {"code_rl.parquet": {"rows": 1, "sha256": build.sha256_file(
        tmp_path / "loose" / "code_rl.parquet")}} and manifest["data_config"]["min_code_tests"] == 1
    assert "(the paper: 16, docs/paper.md §2.3; overridden here)" in (tmp_path / "loose" / "README.md").read_text()
    with pytest.raises(ValueError, match="SFT prompt sources are hub only"):
        build.run(tmp_path / "sft", "mirror", ["sft"])


def test_the_dry_run_names_every_source_with_its_pin_and_loads_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(S, "hub_records", lambda src: pytest.fail(f"dry run loaded {src.name}"))
    build.main(["--out", str(tmp_path / "out"), "--dry-run"])
    out = capsys.readouterr().out
    assert "klear_code_sub15k: hub: Kwai-Klear/KlearReasoner-CodeSub-15K@3f4fdddb0f33" in out
    assert "acereason_1_1_sft: hub: nvidia/AceReason-1.1-SFT@default branch (revision UNVERIFIED)" in out
    assert "lcb_v6: hub:" in out and "sft_prompts.jsonl" in out and not (tmp_path / "out").exists()
    build.main(["--out", str(tmp_path / "out"), "--source", "mirror", "--dry-run"])
    assert "deepscaler_math: UNAVAILABLE (KLEAR_BENCHMARKS is unset)" in capsys.readouterr().out


def test_a_source_that_cannot_load_stops_the_build_naming_it(tmp_path, fake_hub, monkeypatch, capsys):
    def hub(src):
        if src.name == "taco":
            raise SourceUnavailable(src, "no network")
        return _fake_hub(src)
    monkeypatch.setattr(S, "hub_records", hub)
    with pytest.raises(SystemExit) as stop:
        build.main(["--out", str(tmp_path), "--parts", "sft"])
    assert stop.value.code == 2 and "source 'taco' is unavailable (no network)" in capsys.readouterr().err
