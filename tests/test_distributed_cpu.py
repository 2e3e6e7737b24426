"""A dress rehearsal of the distributed path on CPU: SFT and GPPO at ci on 2 processes (torchrun, gloo), run once
whole and once killed twice with SIGKILL and resumed (tests/distributed_cpu.py, one launch per line of ``LAUNCHES``).

Each stage must train on both ranks (the same parameters after every update, disjoint rows or prompts), save complete
checkpoints, and end its killed runs where the uninterrupted one ends: the same run-record bytes, the same weight
bytes, and the same data and parameters at every update any launch logged. ``torchrun`` rather than
``accelerate launch --cpu``, which starts one process whatever ``--num_processes`` says.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from hashlib import sha256
from pathlib import Path

import pytest

from klear_lib.paths import REPO
from klear_lib.training.checkpoints import check

PROCESSES = 2
# (tag, jobs) of the interrupted launches: a job STAGE@K is killed after update K, then resumes in the next launch
LAUNCHES = [("k1", ["sft@5"]), ("k2", ["sft@7"]), ("k3", ["sft", "rl@3"]), ("k4", ["rl@5"]), ("k5", ["rl"])]
# the checkpoints each stage's killed launches resume from: SFT at an epoch's end and mid-epoch 2 (4 steps an
# epoch), RL mid-epoch 1 and at its end (2 RL steps of 2 updates an epoch)
RESUMED_AT = {"sft": [0, 4, 6], "rl": [0, 2, 4]}
UPDATES = {"sft": 8, "rl": 6}
CHECKPOINTS = {"sft": [6, 8], "rl": [2, 4, 6]}  # SFT keeps its last 2 (save_total_limit)
EPOCH = {"sft": (32, 4), "rl": (16, 2)}  # rows or prompts, and the batches of them a rank trains on, an epoch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(model: str, out: Path, tag: str, jobs: list[str]) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(PROCESSES),
           "--master_port", str(_free_port()), str(REPO / "tests" / "distributed_cpu.py"), model, str(out), tag, *jobs]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def runs(ci_model_path, tmp_path_factory) -> Path:
    """``full/<stage>``: the uninterrupted runs; ``killed/<stage>``: the same runs, killed twice each and resumed."""
    root = tmp_path_factory.mktemp("distributed")
    whole = _launch(ci_model_path, root / "full", "full", ["sft", "rl"])
    assert whole.returncode == 0, whole.stderr[-4000:]
    for tag, jobs in LAUNCHES:
        proc = _launch(ci_model_path, root / "killed", tag, jobs)
        killed = any("@" in job for job in jobs)
        assert proc.returncode == (1 if killed else 0), proc.stderr[-4000:]
        assert proc.stderr.count("Signal 9 (SIGKILL) received by PID") == (PROCESSES if killed else 0)  # each rank
    return root


def events(folder: Path, tag: str) -> list[list[dict]]:
    """The event lines of launch ``tag``, per rank."""
    return [[json.loads(line) for line in (folder / f"{tag}-rank{r}.jsonl").read_text().splitlines()]
            for r in range(PROCESSES)]


def by_step(lines: list[dict], key: str) -> dict[int, object]:
    """``{update: value}`` of the events holding ``key`` (digest: parameters; rows/prompts: the data)."""
    return {e["step"]: e[key] for e in lines if key in e}


def data_key(stage: str) -> str:
    return "rows" if stage == "sft" else "prompts"


@pytest.mark.parametrize("stage", ["sft", "rl"])
def test_both_ranks_train_the_same_weights_on_disjoint_data(runs, stage):
    ranks = events(runs / "full" / stage, "full")
    assert [r[0] for r in ranks] == [{"world_size": PROCESSES, "backend": "gloo", "resumed_at": 0}] * PROCESSES
    digests = [by_step(r, "digest") for r in ranks]
    assert sorted(digests[0]) == list(range(1, UPDATES[stage] + 1))
    assert digests[0] == digests[1] and len(set(digests[0].values())) == UPDATES[stage]  # equal, and moving
    data = [by_step(r, data_key(stage)) for r in ranks]
    assert data[0].keys() == data[1].keys()
    for step in data[0]:
        assert not set(data[0][step]) & set(data[1][step]), f"update {step}: both ranks hold the same data"
    n_data, n_batches = EPOCH[stage]
    first_epoch = [x for d in data for step in list(d)[:n_batches] for x in d[step]]
    assert len(first_epoch) == len(set(first_epoch)) == n_data  # the ranks' batches of an epoch cover the data once


@pytest.mark.parametrize("stage", ["sft", "rl"])
def test_every_checkpoint_is_complete_with_each_ranks_rng_state(runs, stage):
    folder = runs / "full" / stage / "run"
    assert sorted(int(p.name.split("-")[1]) for p in folder.glob("checkpoint-*")) == CHECKPOINTS[stage]
    for step in CHECKPOINTS[stage]:
        check(folder / f"checkpoint-{step}")
        assert all((folder / f"checkpoint-{step}" / f"rng_state_{r}.pth").is_file() for r in range(PROCESSES))


def _sha(path: Path) -> str:
    return sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("stage", ["sft", "rl"])
def test_killed_runs_resume_to_the_uninterrupted_end(runs, stage):
    full, killed = runs / "full" / stage, runs / "killed" / stage
    assert (killed / "record.csv").read_bytes() == (full / "record.csv").read_bytes()
    assert _sha(killed / "run" / "final" / "model.safetensors") == _sha(full / "run" / "final" / "model.safetensors")
    reference = events(full, "full")
    tags = sorted(p.name.split("-rank")[0] for p in killed.glob("*-rank0.jsonl"))
    assert [events(killed, t)[0][0]["resumed_at"] for t in tags] == RESUMED_AT[stage]
    for tag in tags:  # every update any launch trained, retrained ones too, had the data and weights of the full run
        for rank, lines in enumerate(events(killed, tag)):
            for key in ("digest", data_key(stage)):
                seen, expected = by_step(lines, key), by_step(reference[rank], key)
                assert seen == {s: expected[s] for s in seen}, f"launch {tag}, rank {rank}: {key} differs"
