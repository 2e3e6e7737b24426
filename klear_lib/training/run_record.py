"""A CSV run record of a training run: one row per optimizer update, resumable, no timings (reruns compare equal).

Crash-safe: a rewrite replaces the file atomically, an append first checks that the last line is whole, and a
read drops a torn last line (the run died writing it; the resumed run logs that step again) but refuses a row
with missing fields or a record that lost rows the checkpoint being resumed from has already trained.

Each row ends with its provenance (``klear_lib.tables.PROVENANCE``: CPU model, numerics mode, torch and MKL versions);
a record written before those columns existed resumes with its rows reading ``unknown`` there.
"""
from __future__ import annotations

import csv
import logging
import math
import numbers
from pathlib import Path

import pandas as pd
from transformers import TrainerCallback

from klear_lib import artifacts, numerics
from klear_lib.tables import PROVENANCE

log = logging.getLogger(__name__)

# The clipping diagnostics, one column each: the share of tokens in each (advantage sign, ratio side) case, then
# the share clipped and the clipped tokens' share of the gradient (GPPOTrainer's gppo/* logs).
CLIP_CASES = ("frac_adv_pos_ratio_high", "frac_adv_pos_ratio_low", "frac_adv_neg_ratio_low", "frac_adv_neg_ratio_high")
CLIP_COLUMNS = (*CLIP_CASES, "clip_frac", "clipped_grad_share")
# column -> key in the trainer's logs (GPPOTrainer logs gen/* once per generation batch, gppo/* per update)
RECORD_KEYS = {
    **{c: f"gen/{c}" for c in ("reward_mean", "accuracy", "kept_group_frac", "trained_group_frac", "response_length")},
    **{c: c for c in ("entropy", "grad_norm", "learning_rate", "loss", "policy_loss", "sft_loss")},
    **{c: f"gppo/{c}" for c in (*CLIP_COLUMNS, "max_fa_clipped", "max_fa_rest", "clipped_logp_grad_norm",
                                "logp_grad_norm", "ratio_mean")},
}
RECORD_COLUMNS = ["step", "rl_step", *RECORD_KEYS, "config_hash", *PROVENANCE]
# RL with vLLM rollouts and TRL's importance-sampling correction: TRL's gap between the vLLM and trainer log-probs of
# the generation batch, logged with the first update of each RL step (the step's other updates leave them empty)
VLLM_KEYS = {key.replace("/", "_"): f"sampling/{key}" for key in (
    "sampling_logp_difference/mean", "sampling_logp_difference/max", "importance_sampling_ratio/min",
    "importance_sampling_ratio/mean", "importance_sampling_ratio/max")}
# SFT runs (TRL SFTTrainer's log keys)
SFT_KEYS = {k: k for k in ("epoch", "loss", "grad_norm", "learning_rate", "mean_token_accuracy", "entropy")}


def rl_keys(vllm_correction: bool) -> dict:
    """The logged keys of an RL run record: ``RECORD_KEYS``, plus ``VLLM_KEYS`` when TRL corrects for vLLM."""
    return {**RECORD_KEYS, **VLLM_KEYS} if vllm_correction else RECORD_KEYS


def columns(keys: dict = RECORD_KEYS, rl: bool = True) -> list[str]:
    """Record columns: step (optimizer update), rl_step (generation batch; RL only), the logged keys, config hash,
    provenance."""
    return ["step", *(["rl_step"] if rl else []), *keys, "config_hash", *PROVENANCE]


def record_row(logs: dict, step: int, updates_per_step: int | None, cfg_hash: str = "",
               keys: dict = RECORD_KEYS, provenance: dict | None = None) -> dict[str, str]:
    """One record row from a trainer ``logs`` dict at optimizer ``step`` (1-based); a logged value that is not a
    number raises naming its column; ``provenance``: what drew it (``numerics.provenance()``; None: unknown)."""
    row = {"step": str(step)}
    if updates_per_step:
        row["rl_step"] = str((step - 1) // updates_per_step + 1)
    for col, key in keys.items():
        value = logs.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            raise ValueError(f"run record, step {step}: field {col!r} is {value!r}, not a number")
        missing = value is None or (isinstance(value, float) and math.isnan(value))  # '' for missing or NaN
        row[col] = "" if missing else f"{value:.10g}" if isinstance(value, float) else str(value)  # 10 digits
    return {**row, "config_hash": cfg_hash, **{c: (provenance or {}).get(c, numerics.UNKNOWN) for c in PROVENANCE}}


TEXT_FIELDS = ("step", "rl_step", "config_hash", *PROVENANCE)  # the fields of a row that are not logged numbers


def check_row(row: dict[str, str], where: str) -> None:
    """``ValueError`` naming ``where`` (file and line) and the field when a step is not a step number or a logged
    value is neither empty nor a number."""
    for field in ("step", "rl_step"):
        if field in row and not row[field].isdigit():
            raise ValueError(f"{where}: field {field!r} is {row[field]!r}, not a step number")
    for field, value in row.items():
        if field in TEXT_FIELDS or value == "":
            continue
        try:
            float(value)
        except ValueError:
            raise ValueError(f"{where}: field {field!r} is {value[:100]!r}, not a number") from None


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a run record (``[]`` when absent); a torn last line is dropped with a warning, a row with
    missing or extra fields raises naming the file and line."""
    path = Path(path)
    if not path.exists():
        return []
    lines = path.read_text().splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        log.warning("%s: dropping its torn last line %d (%r): the run died writing it, a resumed run logs that step "
                    "again", path, len(lines), lines[-1])
        lines = lines[:-1]
    reader, rows = csv.DictReader(lines), []
    try:
        for row in reader:
            if None in row or None in row.values():  # DictReader's marks of a short row (None values), a long one
                filled = sum(v is not None for k, v in row.items() if k is not None)
                raise ValueError(f"{path}, line {reader.line_num}: {filled} of the {len(reader.fieldnames)} fields "
                                 f"{reader.fieldnames}")
            check_row(row, f"{path}, line {reader.line_num}")
            rows.append(row)
    except csv.Error as err:  # e.g. a field over the csv module's 128 KB limit
        raise ValueError(f"{path}, line {reader.line_num + 1}: not a run record row ({err})") from None
    return rows


def header(path: Path) -> list[str] | None:
    """The column names on the first line of the CSV at ``path`` (None when it has no first line)."""
    with Path(path).open(newline="") as fh:
        return next(csv.reader(fh), None)


def write_rows(path: Path, rows: list[dict[str, str]], fields: list[str] = RECORD_COLUMNS) -> None:
    """Write the record from scratch (header + rows), replacing the old file atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with artifacts.replacing(path) as tmp, tmp.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def rows_up_to(path: Path, step: int, fields: list[str], cfg_hash: str | None = None) -> list[dict[str, str]]:
    """The record's rows of optimizer steps 1..``step`` (a resume point), or ``ValueError`` naming the file when
    it has another header, misses any of them (emptied, cut or replaced: the rows cannot be logged again) or holds
    a row of another config than ``cfg_hash`` (another run wrote into this record: its rows are not ours)."""
    names = header(path) if path.exists() else None
    before = [c for c in fields if c not in PROVENANCE]  # a record written before the provenance columns
    if names != fields and not (names == before and before != fields):
        found = "no file" if not path.exists() else f"header {names}" if names else "an empty file"
        raise ValueError(f"{path}: resuming from step {step} needs this run record with columns {fields}, found "
                         f"{found}; restore it (e.g. from git) or delete the checkpoints to train again")
    rows = [{**dict.fromkeys(PROVENANCE, numerics.UNKNOWN), **r} for r in read_rows(path) if int(r["step"]) <= step]
    if [int(r["step"]) for r in rows] != list(range(1, step + 1)):
        raise ValueError(f"{path}: resuming from step {step} needs its rows of steps 1..{step}, found "
                         f"{len(rows)} rows; restore it (e.g. from git) or delete the checkpoints to train again")
    if foreign := [r for r in rows if cfg_hash is not None and r.get("config_hash") != cfg_hash]:
        raise ValueError(f"{path}: resuming a run of config {cfg_hash!r} from step {step}, but its row of step "
                         f"{foreign[0]['step']} has config_hash {foreign[0].get('config_hash')!r}: another run "
                         f"wrote into this record; restore it or delete the checkpoints to train again")
    return rows


class RunRecord(TrainerCallback):
    """Appends a row per logged optimizer update to ``path``; on resume, drops rows past the checkpoint.

    ``updates_per_step`` (RL) adds the ``rl_step`` column; pass ``None`` and ``keys=SFT_KEYS`` for SFT.
    """

    def __init__(self, path: str | Path, updates_per_step: int | None = 1, cfg_hash: str = "",
                 keys: dict = RECORD_KEYS):
        self.path, self.updates_per_step, self.cfg_hash, self.keys = Path(path), updates_per_step, cfg_hash, keys
        self.fields = columns(keys, rl=bool(updates_per_step))
        self.provenance: dict | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.provenance = numerics.provenance()
        if state.is_world_process_zero:  # a fresh run (step 0) starts a new record whatever the old file holds
            kept = rows_up_to(self.path, state.global_step, self.fields, self.cfg_hash) if state.global_step else []
            write_rows(self.path, kept, self.fields)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or "loss" not in logs:
            return
        if not self.path.exists() or not artifacts.ends_with_newline(self.path):
            raise ValueError(f"{self.path}: its last line is incomplete or the file is gone: something else wrote "
                             f"to this run record, refusing to append after it")
        with self.path.open("a", newline="") as fh:
            row = record_row(logs, state.global_step, self.updates_per_step, self.cfg_hash, self.keys, self.provenance)
            csv.DictWriter(fh, fieldnames=self.fields).writerow(row)


def record_summary(record, columns, fraction: float = 0.1):
    """Mean of ``columns`` over the first and the last ``fraction`` of a run record (a DataFrame)."""
    n = max(1, int(len(record) * fraction))
    return pd.DataFrame({"first": record.head(n)[columns].mean(), "last": record.tail(n)[columns].mean()})
