"""SFT through TRL: assistant-only loss, a CSV run record, and resumption that ends where a full run ends."""
from __future__ import annotations

import csv

import pytest
import torch

from klear_lib.configs import get_config
from klear_lib.models import load
from klear_lib.seeding import py_rng
from klear_lib.training.checkpoints import MARKER, check
from klear_lib.training.sft import sft_dataset, train_sft


def _rows(n=64):
    rng = py_rng(0, "test-sft")
    rows = []
    for i in range(n):
        a, b = rng.randint(10, 99), rng.randint(2, 9)
        rows.append({"id": f"r{i}", "messages": [
            {"role": "user", "content": f"Compute {a}*{b}."},
            {"role": "assistant", "content": f"<think>\n{a}*{b}={a * b}\n</think>\n\\boxed{{{a * b}}}"}]})
    return rows


CFG = get_config("sft", "ci", per_device_batch_size=8, num_epochs=1.0, save_steps=3, max_rows=None)


def test_bad_row_names_the_row():
    rows = _rows(3)
    rows[1]["messages"] = rows[1]["messages"][:1]
    with pytest.raises(ValueError, match="SFT row r1: field 'messages'"):
        sft_dataset(rows)


def test_training_lowers_loss_and_writes_record(ci_model_path, tmp_path):
    record = tmp_path / "run.csv"
    final = train_sft(CFG, ci_model_path, _rows(), tmp_path / "out", record_path=record)
    steps = list(csv.DictReader(record.open()))
    assert [int(r["step"]) for r in steps] == list(range(1, 9))
    assert float(steps[-1]["loss"]) < float(steps[0]["loss"])
    model, _ = load(final)
    base, _ = load(ci_model_path)
    assert any(not torch.equal(a, b) for a, b in zip(model.parameters(), base.parameters()))
    ckpts = sorted((tmp_path / "out").glob("checkpoint-*"))
    assert ckpts and all((c / MARKER).exists() for c in ckpts)  # each one marked complete once written
    for ckpt in ckpts:
        check(ckpt)


def test_resumed_run_ends_where_uninterrupted_run_ends(ci_model_path, tmp_path):
    full = train_sft(CFG, ci_model_path, _rows(), tmp_path / "full", record_path=tmp_path / "a.csv")
    partial_dir = tmp_path / "killed"
    train_sft(CFG, ci_model_path, _rows(), partial_dir, record_path=tmp_path / "b.csv", stop_at_step=3)
    assert not (partial_dir / "final").exists()
    resumed = train_sft(CFG, ci_model_path, _rows(), partial_dir, record_path=tmp_path / "b.csv")
    a, _ = load(full)
    b, _ = load(resumed)
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(pa, pb), name
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()
