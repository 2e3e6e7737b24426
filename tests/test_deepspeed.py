"""DeepSpeed ZeRO-3 at ``full``: the shipped config, the order (TRL arguments, then the model, so that
``from_pretrained`` shards while it loads), and a real ZeRO-3 SFT run on CPU where DeepSpeed is installed
(``make test-deepspeed``: DeepSpeed's CPU accelerator, gloo, 1 and 2 processes)."""
from __future__ import annotations

import csv
import importlib.util
import json
import os
import socket
import subprocess
import sys

import pytest
import torch
import trl.trainer.grpo_trainer as grpo_module
from transformers.integrations import deepspeed as hf_deepspeed
from zero3_cpu import CFG, rows

from klear_lib.configs import get_config
from klear_lib.configs.trl import RL_FIELDS, SFT_FIELDS, deepspeed_file, trl_kwargs
from klear_lib.models import load
from klear_lib.paths import DEEPSPEED_CONFIGS, REPO
from klear_lib.training import gppo_trainer, sft

HAS_DEEPSPEED = importlib.util.find_spec("deepspeed") is not None
needs_deepspeed = pytest.mark.skipif(not HAS_DEEPSPEED, reason="deepspeed is not installed here (make setup-deepspeed)")


class Stop(Exception):
    """Raised where the model would be created: the test has seen what it needs."""


class FakeZero3Config:
    """Stands in for transformers' ``HfTrainerDeepSpeedConfig`` where DeepSpeed is not installed (its constructor
    checks for it): reads the JSON and registers itself as the global config, as the real one does."""

    def __init__(self, path):
        self.config = json.loads(open(path).read())
        hf_deepspeed.set_hf_deepspeed_config(self)

    def trainer_config_process(self, args, auto_find_batch_size=False):
        """Nothing to fill in: only the stage is read here."""

    def is_zero3(self) -> bool:
        return self.config["zero_optimization"]["stage"] == 3


@pytest.fixture
def zero3_hook(monkeypatch):
    """The ZeRO-3 hook as TrainingArguments installs it: real with DeepSpeed installed, else ``FakeZero3Config``
    (and a plain holder for accelerate's ``DeepSpeedPlugin``, which needs DeepSpeed too)."""
    if not HAS_DEEPSPEED:
        import accelerate.utils

        monkeypatch.setattr(hf_deepspeed, "HfTrainerDeepSpeedConfig", FakeZero3Config)
        monkeypatch.setattr(accelerate.utils, "DeepSpeedPlugin", lambda hf_ds_config: hf_ds_config)
    hf_deepspeed.unset_hf_deepspeed_config()
    yield
    hf_deepspeed.unset_hf_deepspeed_config()


def _spy(seen: dict):
    """A model loader that records whether ZeRO-3 is on and the dtype asked for, then stops the run."""
    def load(path, dtype="float32", **kwargs):
        seen.update(zero3=hf_deepspeed.is_deepspeed_zero3_enabled(), dtype=str(kwargs.get("dtype", dtype)))
        raise Stop
    return load


def test_full_layout_asks_for_the_shipped_zero3_config():
    shipped = json.loads((DEEPSPEED_CONFIGS / "zero3.json").read_text())
    assert shipped["zero_optimization"]["stage"] == 3
    for stage, table in (("sft", SFT_FIELDS), ("rl_math", RL_FIELDS), ("rl_code", RL_FIELDS)):
        assert trl_kwargs(table, get_config(stage, "full"))["deepspeed"] == str(DEEPSPEED_CONFIGS / "zero3.json")
        for preset in ("ci", "tiny"):  # no DeepSpeed, so the stored runs train as before
            assert trl_kwargs(table, get_config(stage, preset))["deepspeed"] is None
    with pytest.raises(FileNotFoundError, match=r"no DeepSpeed config 'zero9'.*\['zero3'\]"):
        deepspeed_file("zero9")


def test_sft_creates_the_model_after_the_zero3_config(ci_model_path, tmp_path, zero3_hook, monkeypatch):
    seen = {}
    monkeypatch.setattr(sft, "load", _spy(seen))
    cfg = get_config("sft", "ci", deepspeed="zero3", bf16=True)  # full's ZeRO-3 and bf16, on the CPU
    with pytest.raises(Stop):
        sft.train_sft(cfg, ci_model_path, [], tmp_path / "out")
    assert seen == {"zero3": True, "dtype": "bfloat16"}
    hf_deepspeed.unset_hf_deepspeed_config()
    with pytest.raises(Stop):  # ci as stored: no DeepSpeed, float32
        sft.train_sft(get_config("sft", "ci"), ci_model_path, [], tmp_path / "plain")
    assert seen == {"zero3": False, "dtype": "float32"}


def test_rl_creates_the_model_after_the_zero3_config(ci_model_path, tmp_path, zero3_hook, monkeypatch):
    seen = {}
    monkeypatch.setattr(grpo_module, "create_model_from_path", _spy(seen))  # GRPOTrainer loads a model given by path
    rows = [{"prompt": [{"role": "user", "content": "Say a"}], "reward_model": {"ground_truth": "a", "style": "rule"},
             "extra_info": {"id": "say-a", "split": "train", "tier": 1}}]
    cfg = get_config("rl_math", "ci", deepspeed="zero3", bf16=True)
    with pytest.raises(Stop):
        gppo_trainer.build_rl_trainer(cfg, ci_model_path, rows, output_dir=tmp_path / "out")
    assert seen == {"zero3": True, "dtype": "bfloat16"}


# ---- a real ZeRO-3 run on CPU (DeepSpeed's CPU accelerator, gloo) -------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _zero3_run(ci_model_path, out, processes: int) -> list[dict]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes),
           "--master_port", str(_free_port()), str(REPO / "tests" / "zero3_cpu.py"), ci_model_path, str(out)]
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(processes)]


def _losses(path) -> list[float]:
    return [float(row["loss"]) for row in csv.DictReader(open(path))]


@needs_deepspeed
@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_zero3_sft_on_cpu_shards_at_load_and_trains_as_plain_sft(ci_model_path, tmp_path, processes):
    ranks = _zero3_run(ci_model_path, tmp_path / "zero3", processes)
    for facts in ranks:
        assert facts["zero3_at_load"] and facts["whole_numel_at_load"] == 0  # placeholders: the weights are sharded
        assert facts["shard_numel"] * processes == pytest.approx(facts["total_numel"], rel=0.01)
    plain = sft.train_sft(CFG, ci_model_path, rows(), tmp_path / "plain", record_path=tmp_path / "plain.csv")
    assert _losses(tmp_path / "zero3" / "record.csv") == pytest.approx(_losses(tmp_path / "plain.csv"), rel=1e-5)
    gathered, _ = load(ranks[0]["final"])  # the full model, gathered from the shards when saved
    reference, _ = load(plain)
    for (name, a), b in zip(gathered.named_parameters(), reference.parameters()):
        assert torch.allclose(a, b, atol=1e-5), name
