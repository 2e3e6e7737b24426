"""SFT through TRL: assistant-only loss, a CSV run record, and resumption that ends where a full run ends."""
from __future__ import annotations

import csv

import pytest
import torch
from transformers import ProgressCallback
from transformers.utils.notebook import NotebookProgressCallback
from trl import SFTTrainer

from klear_lib.configs import get_config
from klear_lib.configs.base import with_overrides
from klear_lib.models import load
from klear_lib.seeding import py_rng
from klear_lib.training import overhead
from klear_lib.training.checkpoints import MARKER, check
from klear_lib.training.sft import (
    LengthGroupedSFTTrainer,
    length_groups,
    padding_share,
    sft_dataset,
    train_sft,
    trl_args,
)
from sft_drills import drill_rows


def _rows(n=64):
    return drill_rows(n, "test-sft")


CFG = get_config("sft", "ci", per_device_batch_size=8, num_epochs=1.0, save_steps=3, max_rows=None)
GROUPED = with_overrides(CFG, group_overhead=8)  # cheap calls: batches of 8 short rows split too


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


def _mixed_rows(n=24):
    """Rows whose assistant turns run from one to eight lines, so a batch mixes short and long rows."""
    rng = py_rng(1, "test-sft-mixed")
    rows = []
    for i in range(n):
        lines = "\n".join(f"{rng.randint(10, 99)}+{rng.randint(10, 99)}" for _ in range(rng.randint(1, 8)))
        rows.append({"id": f"m{i}", "messages": [{"role": "user", "content": "Add."},
                                                 {"role": "assistant", "content": f"<think>\n{lines}\n</think>\n1"}]})
    return rows


def test_length_groups_cover_each_row_once_and_trade_padding_for_calls():
    lengths = [5, 40, 41, 6, 39, 7, 80]
    for cost in (0, 10, 10**6):
        groups = length_groups(lengths, cost)
        assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert padding_share(lengths, length_groups(lengths, 0)) == 0.0  # free calls: each length alone
    assert length_groups(lengths, 10**6) == [[6, 2, 1, 4, 5, 3, 0]]  # dear calls: one batch, longest first
    assert length_groups(lengths, 10) == [[6], [2, 1, 4], [5, 3, 0]]
    assert padding_share(lengths, [[6, 2, 1, 4, 5, 3, 0]]) > 0.5 > padding_share(lengths, length_groups(lengths, 10))


def test_grouped_batch_has_the_padded_batch_loss_gradient_and_metrics(ci_model_path, tmp_path):
    """The rows of a group are cut to the group's longest row: no real token may see a change, so the loss, every
    gradient and the logged metrics equal those of the whole padded batch (to float rounding)."""
    model, tokenizer = load(ci_model_path)
    trainer = LengthGroupedSFTTrainer(model=model, args=trl_args(CFG, tmp_path), train_dataset=sft_dataset(
        _mixed_rows()), processing_class=tokenizer, overhead=GROUPED.group_overhead)
    batch = next(iter(trainer.get_train_dataloader()))
    lengths = batch["attention_mask"].sum(1).tolist()
    assert len(length_groups(lengths, GROUPED.group_overhead)) > 1 and len(set(lengths)) > 4  # the test exercises a real split
    model.train()
    results = []
    for compute in (SFTTrainer.compute_loss, LengthGroupedSFTTrainer.compute_loss):
        model.zero_grad()
        loss = compute(trainer, model, dict(batch))
        loss.backward()
        metrics = {k: trainer._metrics["train"][k].pop() for k in ("entropy", "mean_token_accuracy")}
        results.append((loss.item(), [p.grad.clone() for p in model.parameters()], metrics))
    (plain_loss, plain_grads, plain_metrics), (loss, grads, metrics) = results
    assert loss == pytest.approx(plain_loss, rel=1e-6)
    for a, b in zip(plain_grads, grads):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-7)
    assert metrics == pytest.approx(plain_metrics, rel=1e-6)
    assert trainer._metrics["train"]["entropy"] == []  # one value per batch, not one per group


def test_grouped_and_plain_training_end_at_the_same_weights(ci_model_path, tmp_path):
    """A whole (short) run: length grouping changes float rounding only, never which rows or how many updates."""
    plain = train_sft(with_overrides(CFG, length_grouping=False), ci_model_path, _mixed_rows(), tmp_path / "plain", record_path=tmp_path / "p.csv")
    grouped = train_sft(GROUPED, ci_model_path, _mixed_rows(), tmp_path / "grouped", record_path=tmp_path / "g.csv")
    for a, b in zip(load(plain)[0].parameters(), load(grouped)[0].parameters()):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6)
    steps = [list(csv.DictReader((tmp_path / f).read_text().splitlines())) for f in ("p.csv", "g.csv")]
    assert [r["step"] for r in steps[0]] == [r["step"] for r in steps[1]]
    for a, b in zip(*steps):
        assert float(b["loss"]) == pytest.approx(float(a["loss"]), rel=1e-5)


def test_lean_training_skips_nan_fill_and_progress_tables_and_trains_the_same_weights(ci_model_path, tmp_path,
                                                                                     monkeypatch):
    """``overhead.lean``: no NaN-filled allocations while training (restored after) and a plain step bar; the
    weights are bit for bit those of a run that fills."""
    assert torch.utils.deterministic.fill_uninitialized_memory
    seen = []
    monkeypatch.setattr(overhead.NoNaNFill, "on_step_end", lambda self, *a, **k: seen.append(
        torch.utils.deterministic.fill_uninitialized_memory), raising=False)
    lean_run = train_sft(CFG, ci_model_path, _mixed_rows(), tmp_path / "lean")
    assert seen and not any(seen) and torch.utils.deterministic.fill_uninitialized_memory
    monkeypatch.setattr(overhead.NoNaNFill, "on_train_begin", lambda self, *a, **k: None)
    filled = train_sft(CFG, ci_model_path, _mixed_rows(), tmp_path / "filled")
    for a, b in zip(load(lean_run)[0].parameters(), load(filled)[0].parameters()):
        assert torch.equal(a, b)


def test_lean_swaps_the_default_progress_callback_for_a_step_bar(ci_model_path, tmp_path):
    model, tokenizer = load(ci_model_path)
    trainer = overhead.lean(SFTTrainer(model=model, args=trl_args(CFG, tmp_path), processing_class=tokenizer,
                                       train_dataset=sft_dataset(_rows(8))))
    kinds = [type(cb) for cb in trainer.callback_handler.callbacks]
    assert overhead.StepBar in kinds and overhead.NoNaNFill in kinds
    assert ProgressCallback not in kinds and NotebookProgressCallback not in kinds
