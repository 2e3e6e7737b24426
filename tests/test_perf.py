"""The non-timing logic of the speed benchmarks: interleaving order, statistics, perf.csv upserts, README section.

No timed assertions here (speed goals live in benchmarks/); the clock is faked where order matters.
"""
from __future__ import annotations

import importlib.util
import math
import sys

import pytest

from klear_lib.paths import REPO


def _bench(name: str):
    """A script of benchmarks/ loaded as a module (the folder is not a package); ``perf``, which the scripts import
    from beside them, is registered under its name."""
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    if name == "perf":
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


perf = _bench("perf")


def fake_clock():
    """A clock that advances by 1 s per reading, so every timed call lasts exactly 1 s."""
    ticks = iter(range(10_000))
    return lambda: float(next(ticks))


def test_interleave_rotates_order_and_drops_warmup():
    calls = []
    fns = {name: (lambda n=name: calls.append(n)) for name in "ABC"}
    times = perf.interleave(fns, reps=3, warmup=1, clock=fake_clock())
    assert calls == list("ABC" "BCA" "CAB" "ABC")
    assert times == {"A": [1.0] * 3, "B": [1.0] * 3, "C": [1.0] * 3}


def test_summary_median_and_iqr():
    assert perf.summary([5, 1, 4, 2, 3]) == {"median": 3, "q1": 2, "q3": 4, "n": 5}
    assert perf.summary([7.0]) == {"median": 7.0, "q1": 7.0, "q3": 7.0, "n": 1}
    with pytest.raises(ValueError, match="no samples"):
        perf.summary([])


def test_paired_ratios():
    times = {"gppo": [2.0, 3.0], "dapo": [1.0, 2.0]}
    assert perf.paired_ratios(times, "gppo", "dapo") == [2.0, 1.5]
    with pytest.raises(ValueError, match="samples"):
        perf.paired_ratios({"gppo": [1.0], "dapo": [1.0, 2.0]}, "gppo", "dapo")


def rows(benchmark, machine, *metrics, value=1.0):
    return [{**perf.row(benchmark, m, value, "s"), "machine": machine} for m in metrics]


def test_merge_replaces_only_the_same_benchmark_on_the_same_machine():
    old = rows("gppo_step", "cpu", "a", "stale") + rows("gppo_step", "gpu", "a") + rows("rollout", "cpu", "x")
    merged = perf.merge(old, rows("gppo_step", "cpu", "a", "b", value=2.0))
    keys = [(r["benchmark"], r["machine"], r["metric"], r["value"]) for r in merged]
    assert keys == [("gppo_step", "cpu", "a", 2.0), ("gppo_step", "cpu", "b", 2.0), ("gppo_step", "gpu", "a", 1.0),
                    ("rollout", "cpu", "x", 1.0)]


def test_bad_rows_name_the_row_and_field():
    with pytest.raises(ValueError, match=r"non-finite value: \[\{'benchmark': 'gppo_step', 'machine': 'cpu'"):
        perf.validate(rows("gppo_step", "cpu", "a", value=math.nan))
    bad = rows("gppo_step", "cpu", "a")
    del bad[0]["unit"]
    with pytest.raises(ValueError, match=r"empty key or required field \['unit'\]"):
        perf.validate(bad)
    with pytest.raises(ValueError, match="duplicate"):
        perf.merge([], rows("gppo_step", "cpu", "a", "a"))


def test_record_round_trip(tmp_path):
    path = tmp_path / "perf.csv"
    perf.record([perf.row("b", "m", 1.234567, "s", "base", "n1")], "cpu", path)
    perf.record([perf.row("c", "m", 2, "x")], "cpu", path)
    assert path.read_text().splitlines() == ["benchmark,metric,value,unit,ratio_to,notes,machine",
                                             "b,m,1.235,s,base,n1,cpu", "c,m,2,x,,,cpu"]
    assert [r["value"] for r in perf.read(path)] == [1.235, 2.0]
    assert perf.read(tmp_path / "absent.csv") == []


def test_splice_adds_markers_once_and_edits_only_between_them():
    text = "# Title\n\nbody\n"
    once = perf.splice(text, "table v1")
    assert once == f"# Title\n\nbody\n\n{perf.START}\ntable v1\n{perf.END}\n"
    after = once + "\n## Later section\n"
    twice = perf.splice(after, "table v2")
    assert twice == after.replace("table v1", "table v2")
    assert perf.splice(twice, "table v2") == twice


@pytest.mark.parametrize("broken", [f"{perf.END}\n{perf.START}\n", f"{perf.START}\n{perf.START}\n{perf.END}\n",
                                    f"{perf.START}\n"])
def test_splice_rejects_broken_markers(broken):
    with pytest.raises(ValueError, match="perf"):
        perf.splice("# Title\n" + broken, "table")


def test_update_readme_renders_a_table_per_machine(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Kit\n")
    data = rows("gppo_step", "2 cores X", "ratio") + rows("full_gpu", "H200; 16 cores", "tok|s")
    perf.update_readme(data, readme)
    text = readme.read_text()
    assert text.startswith("# Kit\n") and text.count(perf.START) == 1
    assert "Machine: 2 cores X" in text and "Machine: H200; 16 cores" in text
    assert "| gppo_step | ratio | 1 | s |  |  |" in text and "tok\\|s" in text
    assert "No benchmark has been recorded yet." in perf.render([])


def test_committed_perf_page_shows_every_committed_row():
    """docs/perf.md is rendered from results/perf.csv; a row recorded without re-rendering it leaves the page stale
    (it went 14 rows behind once). The fix: ``python benchmarks/perf.py``."""
    page = perf.README.read_text()
    assert perf.splice(page, perf.render(perf.read(perf.PERF_CSV))) == page, \
        "docs/perf.md is older than results/perf.csv: run `python benchmarks/perf.py`"


def test_full_gpu_bench_skips_cleanly_without_cuda(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA present: the skip path does not apply")
    module = _bench("bench_full_gpu")
    assert module.main(["--layers", "1"]) == 0
    assert capsys.readouterr().out.startswith("skipped: no CUDA")


def test_full_gpu_bench_training_phase_runs_on_cpu_with_a_small_body(monkeypatch):
    """The GPU script's training half (both trainers, the prepared batch, the step, the rows) on CPU: the ci
    model's body with Qwen3-8B's vocabulary, so a GPU session does not spend its minutes finding a bug here."""
    module = _bench("bench_full_gpu")
    original = module.full_shape_config
    monkeypatch.setattr(module, "full_shape_config", lambda layers=None: original(layers, preset="ci"))
    args = module.parser().parse_args(["--layers", "1", "--dtype", "float32", "--no-checkpointing", "--prompt-len",
                                       "8", "--train-completion-len", "16", "--steps", "2", "--warmup", "0"])
    train = module.train_phase(args, device="cpu")
    assert set(train["times"]) == {"gppo", "trl_dapo"} and all(len(t) == 2 for t in train["times"].values())
    assert train["tokens"] == 2 * (8 + 16) and train["params"] > module.QWEN3_8B_VOCAB  # untied 151,936 x hidden
    rows = {r["metric"]: r for r in module.rows_from(None, train, args)}
    assert {"train.step_s.gppo", "train.tokens_per_s.trl_dapo", "train.ratio.gppo"} <= set(rows)
    assert rows["train.ratio.gppo"]["ratio_to"] == "trl_dapo" and rows["train.ratio.gppo"]["value"] > 0


ROLLOUT_CHILD = """
import importlib.util, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("bench", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
original = module.full_shape_config
module.full_shape_config = lambda layers=None: original(layers, preset="tiny")  # vllm-cpu: head_dim 32, not 8
if __name__ == "__main__":
    args = module.parser().parse_args(["--layers", "1", "--dtype", "float32", "--prompts", "4", "--n", "2",
                                       "--prompt-len", "8", "--gen-len", "16", "--enforce-eager"])
    module.rollout_phase(args, Path(sys.argv[2]))
"""


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
def test_full_gpu_bench_rollout_phase_runs_on_vllm_cpu_with_a_small_body(tmp_path):
    """The GPU script's vLLM half (dummy weights from a config-only folder, token-id prompts, ``ignore_eos``) on
    vllm-cpu, with the tiny model's body and Qwen3-8B's vocabulary, in a child as the script runs it."""
    import json
    import subprocess
    import sys

    from klear_lib.generation import vllm_env

    result = tmp_path / "rollout.json"
    proc = subprocess.run([sys.executable, "-c", ROLLOUT_CHILD, str(REPO / "benchmarks" / "bench_full_gpu.py"),
                           str(result)], env=vllm_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(result.read_text())
    assert out["tokens"] == 4 * 2 * 16 and out["generate_s"] > 0 and out["startup_s"] > 0  # ignore_eos: full length


def test_emit_prints_every_row_and_records_unless_told_not_to(tmp_path, capsys):
    import argparse

    parser = argparse.ArgumentParser()
    perf.add_output_args(parser)
    rows = [perf.row("b", "speedup.x", 2.0, "x", "base", "n=3"), perf.row("b", "t", 0.5, "s")]
    out = tmp_path / "perf.csv"
    assert perf.emit(rows, parser.parse_args(["--out", str(out), "--no-record"]), "m") is None and not out.exists()
    assert perf.emit(rows, parser.parse_args(["--out", str(out)]), "m") == out
    assert [r["metric"] for r in perf.read(out)] == ["speedup.x", "t"]
    printed = capsys.readouterr().out
    assert printed.count("speedup.x") == 2 and printed.count(f"recorded in {out}") == 1


def test_pipeline_bench_names_the_slowest_cells_and_the_changed_tables(tmp_path):
    import json
    import subprocess

    bench = _bench("bench_pipeline")
    cells = [{"cell_type": "code", "source": ["# NBVAL_SKIP\n", f"step_{i}()\n"], "metadata": {"papermill": {
        "duration": d}}} for i, d in enumerate((1.0, 9.5, 3.0))]
    cells.append({"cell_type": "markdown", "source": ["text"], "metadata": {}})
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells}))
    assert bench.slowest_cells(tmp_path / "nb.ipynb", n=2) == [(9.5, "step_1()"), (3.0, "step_2()")]

    repo = tmp_path / "repo"
    (repo / "results" / "ci" / "runs").mkdir(parents=True)
    for name in ("results/ci/a.csv", "results/ci/runs/b.csv"):
        (repo / name).write_text("x\n1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "init"], check=True)
    assert bench.changed_tables(repo, "ci") == (2, [])
    (repo / "results/ci/runs/b.csv").write_text("x\n2\n")
    (repo / "results/ci/new.csv").write_text("x\n")      # untracked: not a committed table
    assert bench.changed_tables(repo, "ci") == (2, ["results/ci/runs/b.csv"])
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert bench.revision(repo) == head                     # results changed, code not
    (repo / "klear_lib").mkdir()
    (repo / "klear_lib" / "fix.py").write_text("")
    assert bench.revision(repo) == f"{head} + uncommitted klear_lib/"


def test_merge_by_metric_keeps_the_benchmark_s_other_rows():
    old = rows("pipeline", "cpu", "ci.total_s", "tiny.stage_s.01")
    merged = perf.merge(old, rows("pipeline", "cpu", "tiny.stage_s.01", "ci.run_s", value=2.0), by="metric")
    assert [(r["metric"], r["value"]) for r in merged] == [("ci.run_s", 2.0), ("ci.total_s", 1.0),
                                                           ("tiny.stage_s.01", 2.0)]
    with pytest.raises(ValueError, match="by must be"):
        perf.merge(old, old, by="machine")
