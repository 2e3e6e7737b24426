"""Fault injection at ci: a real ``kill -9`` during training, inside a checkpoint write and inside an evaluation,
each followed by a resume that must end where an uninterrupted run ends (same parameters byte for byte, same
run-record bytes, same sample bytes); then run records and tables cut, emptied or stripped of their header.

The killed runs are child processes of this file run as a script (``python tests/test_faults.py <scenario> ...``):
the child patches one method so that it sends itself SIGKILL at the injected point, which is as abrupt as an
out-of-memory kill or a pre-empted node: no ``finally`` block, no flush of Python buffers.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
import transformers

from klear_lib import numerics, paths, pipeline, tables
from klear_lib.configs import get_config, recipe
from klear_lib.data import fetch
from klear_lib.evaluation import harness
from klear_lib.evaluation.benchmarks import BenchmarkSpec
from klear_lib.models import load
from klear_lib.paths import REPO
from klear_lib.results import EVAL
from klear_lib.rewards import sandbox_uids as uids
from klear_lib.training import rewards as reward_adapters
from klear_lib.training.checkpoints import MARKER, last_complete
from klear_lib.training.run_record import RunRecord, read_rows, write_rows
from klear_lib.training.sft import sft_dataset, train_sft
from sft_drills import drill_rows
import hostile_programs as hp

SFT_CFG = get_config("sft", "ci", per_device_batch_size=8, num_epochs=1.0, save_steps=3, max_rows=None)  # 8 steps
EVAL_CFG = get_config("eval", "ci", k_math=2, max_problems=None, chunk_problems=2, max_new_tokens=24)
SPEC = BenchmarkSpec("toy_math", "math", None, "world")
RL_KW = {"learning_rate": 0.005}  # ci: 2 RL steps of 2 updates, a checkpoint after each RL step


def sft_rows(n: int = 64) -> list[dict]:
    """Multiplication drills in the SFT schema (``sft_drills``)."""
    return drill_rows(n, "test-faults")


def math_rows(n: int = 5) -> list[dict]:
    """Evaluation rows with integer answers (the ci model answers them wrongly; the verdicts still get stored)."""
    return [{"data_source": "toy", "prompt": [{"role": "user", "content": f"What is {i}+{i}?"}], "ability": "math",
             "reward_model": {"ground_truth": str(2 * i), "style": "rule"}, "extra_info": {"id": f"p{i}"}}
            for i in range(n)]


def rl_rows(n: int = 8) -> list[dict]:
    """RL rows in the verl schema (the toy judge below rewards any response holding an 'a')."""
    return [{**row, "extra_info": {"id": f"toy-{i}", "split": "train", "tier": 1}}
            for i, row in enumerate(math_rows(n))]


def toy_judge(response: str, truth: str) -> float:
    """A judge with signal on a random micro model, so the GPPO updates are not all filtered out."""
    return 1.0 if "a" in response else -1.0


# ---- the child process: one scenario, killed at its injected point ------------------------------------------
def kill_self() -> None:
    """SIGKILL this process: nothing after this line runs, nothing buffered is flushed."""
    os.kill(os.getpid(), signal.SIGKILL)


def kill_while_logging(step: int) -> None:
    """Die while the run-record row of optimizer ``step`` is being written: the row is left torn."""
    original = RunRecord.on_log

    def on_log(self, args, state, control, logs=None, **kwargs):
        original(self, args, state, control, logs=logs, **kwargs)
        if state.global_step == step and logs and "loss" in logs:
            os.truncate(self.path, self.path.stat().st_size - 7)
            kill_self()
    RunRecord.on_log = on_log


def kill_inside_checkpoint(step: int) -> None:
    """Die writing ``checkpoint-<step>``: the weights are on disk, the optimizer, scheduler and RNG states not."""
    original = transformers.Trainer._save_optimizer_and_scheduler

    def save(self, output_dir):
        if Path(output_dir).name == f"checkpoint-{step}":
            kill_self()
        return original(self, output_dir)
    transformers.Trainer._save_optimizer_and_scheduler = save


def kill_inside_chunk(n_calls: int) -> None:
    """Die in the ``n_calls``-th sample append of an evaluation, with half of that chunk's bytes written."""
    original, calls = harness.append_samples, []

    def append(path, records):
        calls.append(path)
        if len(calls) == n_calls:
            text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(text[: len(text) // 2])
            kill_self()
        return original(path, records)
    harness.append_samples = append


def child(scenario: str, model: str, out: str) -> None:
    """Run ``scenario`` in this process until its injected kill."""
    out = Path(out)
    if scenario == "sft-log":
        kill_while_logging(5)
    elif scenario in ("sft-ckpt", "rl-ckpt"):
        kill_inside_checkpoint(6 if scenario == "sft-ckpt" else 4)
    if scenario.startswith("sft"):
        train_sft(SFT_CFG, model, sft_rows(), out / "sft", record_path=out / "sft.csv")
    elif scenario == "rl-ckpt":
        reward_adapters._default_judge = lambda kind, *_: toy_judge
        paths.runs_dir = lambda preset: out
        pipeline.rl_stage(recipe("ci", rl_math=RL_KW), model, "math", rows=rl_rows(), name="rl")
    elif scenario == "eval":
        kill_inside_chunk(2)
        harness.evaluate(model, SPEC, math_rows(), EVAL_CFG, out, stage="t")
    raise SystemExit(f"scenario {scenario!r} ended without being killed")


def run_killed(scenario: str, model: str | Path, out: Path, argv: list[str] | None = None) -> None:
    """Run ``scenario`` in a child process (or the script ``argv``) and check that SIGKILL, not an error, ended it."""
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, *(argv or [__file__, scenario, str(model), str(out)])], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]


# A table write killed after half its temporary file: a script of its own, to spare it the training imports.
TABLE_CHILD = """
import json, os, signal, sys
import pandas as pd
from klear_lib import tables
from klear_lib.results import EVAL

original = pd.DataFrame.to_csv
def to_csv(self, tmp, **kw):
    original(self, tmp, **kw)
    os.truncate(tmp, os.path.getsize(tmp) // 2)
    os.kill(os.getpid(), signal.SIGKILL)
pd.DataFrame.to_csv = to_csv
tables.write(EVAL, json.loads(sys.argv[2]), sys.argv[1])
"""


# ---- kill -9 during SFT: a torn record row, a half-written checkpoint -------------------------------------
@pytest.fixture(scope="module")
def sft_reference(ci_model_path, tmp_path_factory):
    """The uninterrupted SFT run: (final model folder, run record), trained once."""
    out = tmp_path_factory.mktemp("sft_reference")
    return train_sft(SFT_CFG, ci_model_path, sft_rows(), out / "sft", record_path=out / "sft.csv"), out / "sft.csv"


def assert_same_weights(a: Path, b: Path) -> None:
    """The two saved models hold the same parameters, bit for bit."""
    (ma, _), (mb, _) = load(a), load(b)
    for (name, pa), pb in zip(ma.named_parameters(), mb.parameters()):
        assert torch.equal(pa, pb), name


def test_sft_killed_while_logging_resumes_to_the_same_end(sft_reference, ci_model_path, tmp_path, caplog):
    """Killed at step 5 with its record row half written: resumes from checkpoint-3, drops the torn row and
    logs steps 4 to 8 again."""
    run_killed("sft-log", ci_model_path, tmp_path)
    assert not (tmp_path / "sft.csv").read_text().endswith("\n")
    with caplog.at_level(logging.WARNING):
        final = train_sft(SFT_CFG, ci_model_path, sft_rows(), tmp_path / "sft", record_path=tmp_path / "sft.csv")
    assert "torn last line" in caplog.text
    assert_same_weights(sft_reference[0], final)
    assert (tmp_path / "sft.csv").read_bytes() == sft_reference[1].read_bytes()


def test_sft_killed_inside_a_checkpoint_write_falls_back_to_the_complete_one(sft_reference, ci_model_path, tmp_path,
                                                                          caplog):
    """Killed writing checkpoint-6 after its weights: that folder is skipped (a log line names it) and the run
    resumes from checkpoint-3 instead of loading new weights beside a fresh optimizer."""
    run_killed("sft-ckpt", ci_model_path, tmp_path)
    half = tmp_path / "sft" / "checkpoint-6"
    assert (half / "model.safetensors").exists() and not (half / "optimizer.pt").exists()
    with caplog.at_level(logging.WARNING):
        final = train_sft(SFT_CFG, ci_model_path, sft_rows(), tmp_path / "sft", record_path=tmp_path / "sft.csv")
    assert f"skipping {half}" in caplog.text
    assert_same_weights(sft_reference[0], final)
    assert (tmp_path / "sft.csv").read_bytes() == sft_reference[1].read_bytes()


def damaged_copy(reference_final: Path, out: Path, damage: str) -> Path:
    """A copy of the reference run's last complete checkpoint under ``out``, with one state file damaged."""
    ckpt = out / "checkpoint-6"
    shutil.copytree(reference_final.parent / "checkpoint-6", ckpt)
    name, how = damage.split(":")
    if how == "deleted":
        (ckpt / name).unlink()
    elif how == "truncated":
        os.truncate(ckpt / name, (ckpt / name).stat().st_size // 2)
    else:  # garbled: same size, unreadable
        (ckpt / name).write_bytes(b"\x00" * (ckpt / name).stat().st_size)
    return ckpt


@pytest.mark.parametrize("damage", ["optimizer.pt:deleted", "scheduler.pt:truncated", "rng_state.pth:deleted",
                                    "trainer_state.json:garbled", "model.safetensors:truncated"])
def test_a_damaged_complete_checkpoint_is_an_error_not_a_fresh_state(sft_reference, ci_model_path, tmp_path,
                                                                    damage):
    """The Trainer would skip an absent optimizer or RNG file and carry on with fresh state: we refuse, naming
    the file."""
    damaged_copy(sft_reference[0], tmp_path / "sft", damage)
    with pytest.raises((FileNotFoundError, ValueError), match=damage.split(":")[0]):
        train_sft(SFT_CFG, ci_model_path, sft_rows(), tmp_path / "sft", record_path=tmp_path / "sft.csv")


def test_the_picker_skips_unmarked_folders_and_starts_afresh_without_any(sft_reference, tmp_path, caplog):
    """Newest complete first; a folder without the marker is skipped with a warning; none complete: None."""
    out, kept = tmp_path / "run", sft_reference[0].parent  # kept: checkpoint-6 and -8 (save_total_limit 2)
    shutil.copytree(kept / "checkpoint-6", out / "checkpoint-6")
    shutil.copytree(kept / "checkpoint-8", out / "checkpoint-12")
    (out / "checkpoint-12" / MARKER).unlink()
    (out / "checkpoint-9").mkdir()
    with caplog.at_level(logging.WARNING):
        assert last_complete(out) == str(out / "checkpoint-6")
    assert str(out / "checkpoint-12") in caplog.text and str(out / "checkpoint-9") in caplog.text
    (out / "checkpoint-6" / MARKER).unlink()
    assert last_complete(out) is None and last_complete(tmp_path / "absent") is None


# ---- kill -9 during GPPO through the pipeline --------------------------------------------------------------
def test_rl_stage_killed_inside_a_checkpoint_write_resumes_to_the_same_end(ci_model_path, tmp_path, monkeypatch):
    """The pipeline's RL stage killed writing checkpoint-4 (the last RL step) after its weights: it resumes from
    checkpoint-2 and ends with the parameters and the record of an uninterrupted stage."""
    monkeypatch.setattr(reward_adapters, "_default_judge", lambda kind, *_: toy_judge)
    ends = {}
    for name in ("full", "killed"):
        monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path / name / "artifacts"))  # the child inherits it
        monkeypatch.setattr(paths, "runs_dir", lambda preset, out=tmp_path / name: out)
        if name == "killed":
            run_killed("rl-ckpt", ci_model_path, tmp_path / name)
            half = next((tmp_path / name / "artifacts" / "ci" / "rl_math").iterdir()) / "checkpoint-4"
            assert (half / "model.safetensors").exists() and not (half / MARKER).exists()
        ends[name] = pipeline.rl_stage(recipe("ci", rl_math=RL_KW), ci_model_path, "math", rows=rl_rows(), name="rl")
    assert_same_weights(ends["full"], ends["killed"])
    assert (tmp_path / "killed" / "rl.csv").read_bytes() == (tmp_path / "full" / "rl.csv").read_bytes()
    assert len(read_rows(tmp_path / "full" / "rl.csv")) == 4


# ---- kill -9 inside an evaluation --------------------------------------------------------------------------
def test_evaluation_killed_inside_a_benchmark_resumes_to_the_same_samples(ci_model_path, tmp_path):
    """Killed with the second chunk half appended: the resume drops the torn chunk, regenerates it whole with
    the seed of its fixed chunk index and ends with the samples file of an uninterrupted evaluation."""
    full = harness.evaluate(str(ci_model_path), SPEC, math_rows(), EVAL_CFG, tmp_path / "full", stage="t")
    run_killed("eval", ci_model_path, tmp_path / "killed")
    path = harness.samples_path(tmp_path / "killed", SPEC.name, "t", str(ci_model_path))
    assert 2 * EVAL_CFG.k_math < len(path.read_text().splitlines()) < 4 * EVAL_CFG.k_math
    resumed = harness.evaluate(str(ci_model_path), SPEC, math_rows(), EVAL_CFG, tmp_path / "killed", stage="t")
    pd.testing.assert_frame_equal(resumed, full)
    assert path.read_bytes() == harness.samples_path(tmp_path / "full", SPEC.name, "t",
                                                     str(ci_model_path)).read_bytes()


# ---- run records: cut, emptied, header-less, malformed -----------------------------------------------------
class State:
    """The part of ``transformers.TrainerState`` the record reads."""

    def __init__(self, global_step: int):
        self.global_step, self.is_world_process_zero = global_step, True


def record_of(path: Path, steps: int = 6) -> RunRecord:
    """A run record of ``steps`` SFT rows at ``path``, written through ``RunRecord`` itself."""
    record = RunRecord(path, None, "h", {"loss": "loss"})
    record.on_train_begin(None, State(0), None)
    for step in range(1, steps + 1):
        record.on_log(None, State(step), None, logs={"loss": 1.0 / step})
    return record


def test_a_torn_last_record_row_is_dropped_with_a_warning(tmp_path, caplog):
    record = record_of(tmp_path / "run.csv")
    os.truncate(record.path, record.path.stat().st_size - 3)
    with caplog.at_level(logging.WARNING):
        assert [r["step"] for r in read_rows(record.path)] == ["1", "2", "3", "4", "5"]
    assert f"{record.path}: dropping its torn last line 7" in caplog.text
    record.on_train_begin(None, State(4), None)  # resume from checkpoint-4: the cut row is logged again later
    assert [r["step"] for r in read_rows(record.path)] == ["1", "2", "3", "4"]


def test_a_record_row_missing_fields_is_named_by_file_and_line(tmp_path):
    record = record_of(tmp_path / "run.csv")
    lines = record.path.read_text().splitlines(keepends=True)
    lines[3] = lines[3].split(",")[0] + "\r\n"
    record.path.write_text("".join(lines))
    with pytest.raises(ValueError, match=rf"{record.path}, line 4: 1 of the 7 fields"):
        read_rows(record.path)


@pytest.mark.parametrize("damage", ["emptied", "header only", "header-less", "cut at row 3"])
def test_a_lost_record_while_resuming_is_an_error(tmp_path, damage):
    """Resuming from step 4 with fewer than 4 rows left would silently lose the run's first steps."""
    record = record_of(tmp_path / "run.csv")
    lines = record.path.read_text().splitlines(keepends=True)
    kept = {"emptied": [], "header only": lines[:1], "header-less": lines[1:], "cut at row 3": lines[:3]}[damage]
    record.path.write_text("".join(kept))
    with pytest.raises(ValueError, match=str(record.path)):
        record.on_train_begin(None, State(4), None)
    assert record.path.read_text() == "".join(kept)  # left for the user to restore, not overwritten


def test_a_record_from_before_the_provenance_columns_resumes_with_its_rows_unknown(tmp_path):
    record = record_of(tmp_path / "run.csv")
    rows = read_rows(record.path)
    assert {r["cpu"] for r in rows} == {numerics.cpu_model()} and {r["numerics"] for r in rows} == {numerics.mode()}
    old = ["step", "loss", "config_hash"]
    write_rows(record.path, [{k: r[k] for k in old} for r in rows], old)
    record.on_train_begin(None, State(4), None)
    record.on_log(None, State(5), None, logs={"loss": 0.2})
    resumed = read_rows(record.path)
    assert [r["step"] for r in resumed] == ["1", "2", "3", "4", "5"]
    assert [r["cpu"] for r in resumed] == ["unknown"] * 4 + [numerics.cpu_model()]


def test_a_fresh_run_rewrites_the_record_and_appends_only_after_a_whole_line(tmp_path):
    record = record_of(tmp_path / "run.csv")
    record.on_train_begin(None, State(0), None)
    assert record.path.read_bytes() == b"step,loss,config_hash,cpu,numerics,torch,mkl\r\n"
    record.on_log(None, State(1), None, logs={"loss": 0.5})
    os.truncate(record.path, record.path.stat().st_size - 1)  # someone cut it mid-run
    with pytest.raises(ValueError, match=f"{record.path}: its last line is incomplete"):
        record.on_log(None, State(2), None, logs={"loss": 0.25})


def test_a_record_rewrite_that_fails_leaves_the_old_file(tmp_path, monkeypatch):
    record = record_of(tmp_path / "run.csv")
    before = record.path.read_bytes()
    with pytest.raises(TypeError):
        write_rows(record.path, [{"step": "1", "loss": Unwritable(), "config_hash": "h"}], record.fields)
    assert record.path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["run.csv"]


def test_a_resumed_run_refuses_rows_of_another_config(tmp_path):
    """Config X killed at step 4, config Y run into the same record, X resumed: before the fix X's record held Y's
    first steps and X's later ones, silently."""
    record = record_of(tmp_path / "run.csv")  # config "h" (Y) wrote steps 1..6
    resumed = RunRecord(record.path, None, "x", {"loss": "loss"})
    before = record.path.read_bytes()
    with pytest.raises(ValueError, match=rf"{record.path}: resuming a run of config 'x' .* config_hash 'h'"):
        resumed.on_train_begin(None, State(4), None)
    assert record.path.read_bytes() == before


@pytest.mark.parametrize("value, why", [("abc", "field 'loss' is 'abc', not a number"),
                                        ("x" * (200 << 10), "line 3: not a run record row")])
def test_a_record_value_that_is_not_a_number_is_named_by_file_line_and_field(tmp_path, value, why):
    record = record_of(tmp_path / "run.csv")
    lines = record.path.read_text().splitlines(keepends=True)
    fields = lines[2].split(",")  # step, loss, config_hash, then the provenance columns
    lines[2] = ",".join([fields[0], value, *fields[2:]])
    record.path.write_text("".join(lines))
    with pytest.raises(ValueError, match=rf"{record.path}, {why if why.startswith('line') else 'line 3: ' + why}"):
        read_rows(record.path)


def test_a_logged_value_that_is_not_a_number_is_refused(tmp_path):
    record = record_of(tmp_path / "run.csv")
    with pytest.raises(ValueError, match="step 7: field 'loss' is 'abc', not a number"):
        record.on_log(None, State(7), None, logs={"loss": "abc"})


class Unwritable:
    """A value whose text cannot be made: the writer fails halfway through a row."""

    def __str__(self):
        raise TypeError("unwritable")


# ---- result tables: cut, emptied, killed mid-write ---------------------------------------------------------
def eval_row(**kw) -> dict:
    """One eval.csv row (a stage's avg@k on a benchmark)."""
    base = {"stage": "sft", "benchmark": "tiny_aime", "metric": "avg@k", "k": 16, "mean": 0.25, "stderr": 0.05,
            "ci_low": 0.15, "ci_high": 0.35, "n_problems": 50, "n_samples": 800, "seed": 0, "config_hash": "abc123",
            "model": "results/ci/sft-model"}
    return {**base, **kw}


def eval_table(path: Path) -> Path:
    """An eval.csv of 8 rows."""
    rows = [eval_row(stage=s, benchmark=b) for s in ("base", "sft", "rl_math", "rl_code") for b in ("x", "y")]
    return tables.write(EVAL, rows, path)


@pytest.mark.parametrize("cut", ["half", "inside the last field", "last newline"])
def test_a_cut_table_is_refused_naming_the_file(tmp_path, cut):
    """Before the fix the next upsert kept the rows above the cut and silently dropped the others."""
    path = eval_table(tmp_path / "eval.csv")
    size = path.stat().st_size
    os.truncate(path, {"half": size // 2, "inside the last field": size - 4, "last newline": size - 1}[cut])
    cut_text = path.read_text()
    with pytest.raises(ValueError, match=f"{path}: .*cut"):
        tables.read(EVAL, path)
    with pytest.raises(ValueError, match=str(path)):
        tables.upsert_file(EVAL, [eval_row(stage="new")], path)
    assert path.read_text() == cut_text


def test_an_emptied_table_is_refused_naming_the_file(tmp_path):
    path = eval_table(tmp_path / "eval.csv")
    path.write_text("")
    with pytest.raises(ValueError, match=f"{path}: .*empty"):
        tables.read(EVAL, path)


def test_a_table_write_killed_midway_leaves_the_old_table(tmp_path):
    path = eval_table(tmp_path / "eval.csv")
    before = path.read_bytes()
    rows = [eval_row(stage=s) for s in ("base", "sft", "rl_math")]
    run_killed("table", "", tmp_path, ["-c", TABLE_CHILD, str(path), json.dumps(rows)])
    assert path.read_bytes() == before and len(tables.read(EVAL, path)) == 8


# ---- sandboxes of a killed run, model outputs and loaders that once crashed an evaluation -------------------
REWARD_CHILD = """
import json, sys
from klear_lib.rewards import code, sandbox_uids
sandbox_uids.UID_BASE, sandbox_uids.UID_COUNT = int(sys.argv[1]), 1
print(code.code_rewards([sys.argv[2]], [json.loads(sys.argv[3])], timeout_s=10), flush=True)
"""
FAULT_UID = 61241  # pinned, so the restart is handed the uid the killed run held
HONEST = "class Solution:\n    def total(self, nums):\n        return sum(nums)\n"  # its checker forks it


def respond(program: str) -> str:
    return f"<think>\nplan\n</think>\n```python\n{program}\n```"


def reward_child(program: str, tests: list) -> subprocess.Popen:
    """The RL reward of ``program`` in a child process of its own (a trainer) on sandbox uid ``FAULT_UID``."""
    return subprocess.Popen([sys.executable, "-c", REWARD_CHILD, str(FAULT_UID), respond(program), json.dumps(tests)],
                            cwd=REPO, stdout=subprocess.PIPE, text=True)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("firejail") is None, reason="sandbox uids need root")
def test_a_run_killed_with_a_stopped_sandbox_restarts_and_scores_an_honest_program():
    """A trainer SIGKILLed while its sandbox is stopped (the program and its children stopped themselves) leaves
    that sandbox alive on its uid; before the reaper the restarted run, handed the same uid first, scored every
    honest program -1 (its forks failed against the uid's process limit)."""
    killed = reward_child(hp.STOPPED.format(child="pass", parent=hp.STOP_SELF), hp.TESTS)
    deadline = time.monotonic() + 120
    while len(uids.sandbox_pids(FAULT_UID)) < 20 and time.monotonic() < deadline:
        time.sleep(0.2)
    killed.send_signal(signal.SIGKILL)
    killed.communicate()
    assert len(uids.sandbox_pids(FAULT_UID)) >= 20  # stopped, alive, holding the uid
    restarted = reward_child(HONEST, hp.ASSERTS)
    assert restarted.communicate(timeout=300)[0].strip() == "[1.0]"
    assert uids.sandbox_pids(FAULT_UID) == set()


def test_one_model_output_cannot_crash_an_evaluation():
    """A call-based program printing 100,000 nested brackets raised RecursionError out of the judge and the
    harness: the run stored nothing and every resume crashed the same way. Now it is a wrong answer."""
    spec = BenchmarkSpec("toy_code", "code", None, "world")
    rows = [{"ability": "code", "extra_info": {"id": "c0", "tests": hp.FUNCTIONAL}}]
    cfg = SimpleNamespace(code_max_tests=None, seed=0, code_timeout_s=10, judge_workers=1)
    program = hp.DEEP_PRINT.format(text="'[' * 100000")
    records = harness._records(spec, "t", rows, [""], range(1), 1, [[respond(program)]], cfg)
    assert [(r["correct"], r["reward"]) for r in records] == [(False, -1.0)]


DEEP = "[" * 100000 + "]" * 100000


def test_deep_json_in_a_loader_names_the_file_and_line(tmp_path):
    """A mirror file, a samples file or a code ground truth nested past Python's recursion limit was a bare
    RecursionError."""
    jsonl, whole = tmp_path / "rows.jsonl", tmp_path / "rows.json"
    jsonl.write_text('{"a": 1}\n' + DEEP + "\n")
    whole.write_text("[\n{},\n" + DEEP + "\n]")
    with pytest.raises(ValueError, match=f"{jsonl}: line 2: JSON nested too deep"):
        fetch.read_records(jsonl)
    with pytest.raises(ValueError, match=f"{whole}: line 3: JSON nested too deep"):
        fetch.read_records(whole)
    samples = tmp_path / "t.samples.jsonl"
    samples.write_text(json.dumps(sample_record()) + "\n" + DEEP + "\n")
    with pytest.raises(ValueError, match=f"{samples}: line 2: JSON nested too deep"):
        harness.parse_samples(samples)
    with pytest.raises(ValueError, match="row r7: ground_truth is JSON nested too deep"):
        reward_adapters.code_tests(DEEP, "r7")


def sample_record(**kw) -> dict:
    return {"problem_id": "p0", "sample": 0, "problem_index": 0, "response": "x", "correct": False, "reward": -1.0,
            **kw}


@pytest.mark.parametrize("verdict", ["false", None, 1, "missing"])
def test_a_stored_sample_whose_verdict_is_not_a_bool_is_named(tmp_path, verdict):
    """A stored ``correct`` of "false" (or none) counted as correct in every metric."""
    rec = sample_record(correct=verdict)
    if verdict == "missing":
        del rec["correct"]
    path = tmp_path / "t.samples.jsonl"
    path.write_text(json.dumps(sample_record()) + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(ValueError, match=f"{path}: line 2: field 'correct' is .* not true or false"):
        harness.parse_samples(path)


def test_sft_messages_given_as_a_string_are_named():
    with pytest.raises(ValueError, match="SFT row s1: field 'messages' must be a list .* got str"):
        sft_dataset([{"id": "s1", "messages": "hello"}])


if __name__ == "__main__":
    child(*sys.argv[1:])
