"""Presets validate, differ only in scale fields, reject unknown keys, and hash stably."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from klear_lib.configs import GPU_STAGES, PRESET_NAMES, STAGES, algorithm_fields, config_hash, describe, get_config
from klear_lib.configs.__main__ import main as config_cli
from klear_lib.configs.base import IF_CHANGED, LayoutError, spread, to_dict, typed_overrides
from klear_lib.configs.trl import RL_FIELDS, SFT_FIELDS, check_trl_only, trl_kwargs

CONFIG_DIR = Path(__file__).resolve().parent.parent / "klear_lib" / "configs"


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_every_stage_has_all_presets(stage):
    assert set(STAGES[stage]) == set(PRESET_NAMES) | ({"gpu"} if stage in GPU_STAGES else set())
    for preset in PRESET_NAMES:
        cfg = get_config(stage, preset)
        assert dataclasses.is_dataclass(cfg)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(cfg, dataclasses.fields(cfg)[0].name, None)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_presets_share_the_algorithm(stage):
    """ci and tiny change sizes, steps, devices and data sources -- never an algorithm field."""
    cls = type(get_config(stage, "full"))
    names = algorithm_fields(cls)
    full = get_config(stage, "full")
    for preset in ("ci", "tiny", *(("gpu",) if stage in GPU_STAGES else ())):
        cfg = get_config(stage, preset)
        diff = [n for n in names if getattr(cfg, n) != getattr(full, n)]
        assert not diff, f"{stage}/{preset} changes algorithm fields {diff}"


def test_presets_do_differ_in_scale():
    assert get_config("rl_math", "ci").max_steps < get_config("rl_math", "tiny").max_steps
    assert get_config("model", "full").hub_id == "Qwen/Qwen3-8B-Base"


def test_unknown_override_key_raises():
    with pytest.raises(KeyError, match="no_such_field"):
        get_config("rl_math", "tiny", no_such_field=1)
    with pytest.raises(KeyError, match="unknown preset"):
        get_config("rl_math", "huge")
    with pytest.raises(KeyError, match="unknown stage"):
        get_config("pretrain", "tiny")


def test_override_changes_hash_and_value():
    base, other = get_config("rl_math", "tiny"), get_config("rl_math", "tiny", learning_rate=3e-4)
    assert other.learning_rate == 3e-4 and config_hash(base) != config_hash(other)
    assert config_hash(base) == config_hash(get_config("rl_math", "tiny"))


def test_hash_is_stable_across_processes():
    code = "from klear_lib.configs import get_config, config_hash; print(config_hash(get_config('sft','tiny')))"
    out = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONHASHSEED": str(s), "PATH": ""}).stdout.strip() for s in (1, 2)}
    assert out == {config_hash(get_config("sft", "tiny"))}


def test_full_values_cite_the_paper_or_say_unverified():
    """Every value set in a `full` preset carries a docs/paper.md citation or UNVERIFIED on its line."""
    for path in sorted(CONFIG_DIR.glob("*.py")):
        text = path.read_text()
        block = re.search(r'"full":\s*\w+\((.*?)\n\s*\),?\n\}', text, re.S)
        if block is None:
            continue
        lines = [ln for ln in block.group(1).splitlines() if "=" in ln and not ln.strip().startswith("#")]
        for line in lines:
            if re.search(r"\b(bf16|use_cpu|source|dtype)=", line) and "PAPER" not in line:
                continue  # device and data-source switches, not paper values
            assert "docs/paper.md" in line or "UNVERIFIED" in line or "shape" in line, f"{path.name}: {line.strip()}"


# Hashes of the stored ci/tiny stages: they key the checkpoints under .artifacts and fill the config_hash column of
# every results table, so a config change that moves one orphans stored runs. Change them only with the results.
STORED_HASHES = {
    ("data", "ci"): "6fcd4af18d89", ("model", "ci"): "9268b7ff1d95", ("sft", "ci"): "14b20b224f9d",
    ("rl_math", "ci"): "45ff32bc8538", ("rl_code", "ci"): "45ff32bc8538", ("eval", "ci"): "0719766f855f",
    ("data", "tiny"): "24dd2216f5bc", ("model", "tiny"): "4a0e669ef0d9", ("sft", "tiny"): "635f0a340daf",
    ("rl_math", "tiny"): "4f409a8746ef", ("rl_code", "tiny"): "fdd7db622853", ("eval", "tiny"): "b6820f89b053",
}


@pytest.mark.parametrize("stage,preset", sorted(STORED_HASHES))
def test_stored_stage_hashes_do_not_move(stage, preset):
    assert config_hash(get_config(stage, preset)) == STORED_HASHES[stage, preset]


def test_code_stage_is_its_own_config():
    math, code = get_config("rl_math", "full"), get_config("rl_code", "full")
    assert (math.learning_rate, math.mini_batch_prompts) == (1e-6, 16)  # docs/paper.md §2.4
    assert (code.learning_rate, code.mini_batch_prompts) == (5e-7, 32)
    assert (code.updates_per_step, math.updates_per_step) == (4, 8)
    tiny = get_config("rl_code", "tiny")
    assert (tiny.max_steps, tiny.prompts_per_step, tiny.updates_per_step) == (20, 4, 4)
    with pytest.raises(KeyError, match="unknown stage 'rl'"):
        get_config("rl", "tiny")


WORLDS = (1, 2, 8, 64, 128, 256)  # one GPU, a pair, a node, and 8, 16 and 32 nodes of 8 (the official 256)


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("stage", ["rl_math", "rl_code"])
def test_rl_layout_keeps_the_paper_batch_at_every_world_size(stage, world):
    """128 prompts a step, 8 rollouts each, 2x oversampled, in updates of 16 (math) or 32 (code) prompts
    (docs/paper.md §2.4): the same generated and trained rollouts on any of the paper's world sizes that give each
    rank whole groups; code RL on 256 ranks (4 rollouts a rank a step) stops at the config."""
    if (stage, world) == ("rl_code", 256):
        with pytest.raises(LayoutError, match="4 rollouts a rank a step, not whole groups of 8"):
            get_config(stage, "full", world_size=world)
        return
    cfg = get_config(stage, "full", world_size=world)
    kw = trl_kwargs(RL_FIELDS, cfg)
    prompts, updates = 128, {"rl_math": 8, "rl_code": 4}[stage]
    slots = kw["per_device_train_batch_size"] * world  # rollouts of one micro-step over all ranks
    generated = slots * kw["steps_per_generation"] * kw["oversample"]
    assert generated == prompts * 8 * 2
    assert kw["steps_per_generation"] // kw["gradient_accumulation_steps"] == updates
    kept = kw["keep_groups"] or generated // kw["oversample"] // 8  # groups trained a step
    assert kept == prompts and kept * 8 // updates == cfg.mini_batch_rollouts == prompts * 8 // updates
    assert cfg.padded == (stage == "rl_math" and world == 256)  # 128 rollouts an update, one slot a rank
    if not cfg.padded:
        assert slots * kw["gradient_accumulation_steps"] == cfg.mini_batch_rollouts and kw["keep_groups"] is None
    if not cfg.padded:  # GPPOTrainer._check_whole_groups: a rank's kept rollouts of a step are whole groups
        assert kw["per_device_train_batch_size"] * kw["steps_per_generation"] % 8 == 0


@pytest.mark.parametrize("world", WORLDS)
def test_sft_layout_keeps_the_global_batch_at_every_world_size(world):
    cfg = get_config("sft", "full", world_size=world)
    assert cfg.global_batch == 256 and cfg.world_size == world  # UNVERIFIED size, the same on any world
    kw = trl_kwargs(SFT_FIELDS, cfg)
    assert kw["per_device_train_batch_size"] * kw["gradient_accumulation_steps"] * world == 256


@pytest.mark.parametrize("stage,world,says", [
    ("sft", 512, r"sft \(full\): a global batch of 256 rows does not split over 512 ranks.*divides 256"),
    ("sft", 3, r"sft \(full\): a global batch of 256 rows does not split over 3 ranks"),
    ("rl_math", 512, r"rl_math \(full\): a mini-batch of 128 rollouts .* over 512 ranks .*divide 128 or be 256"),
    ("rl_math", 24, r"rl_math \(full\): a mini-batch of 128 rollouts .* over 24 ranks"),
    ("rl_code", 512, r"rl_code \(full\): a mini-batch of 256 rollouts .* over 512 ranks .*must divide 256$"),
])
def test_a_layout_that_loses_the_batch_names_stage_batch_and_world(stage, world, says):
    with pytest.raises(LayoutError, match=says):
        get_config(stage, "full", world_size=world)


def test_padded_layout_needs_one_slot_a_rank_and_whole_groups():
    math256 = get_config("rl_math", "full", world_size=256)
    assert (math256.gradient_accumulation_steps, math256.per_device_rollouts) == (1, 1)
    with pytest.raises(LayoutError, match="over 256 ranks"):  # no oversampling: nothing fills the extra slots
        get_config("rl_math", "full", world_size=256, oversample=1)
    with pytest.raises(LayoutError, match="must divide 256$"):  # 4 updates a step: half a group a rank
        get_config("rl_code", "full", world_size=512)
    tiny = get_config("rl_math", "tiny", world_size=16)  # 8 rollouts an update x 2: padded at tiny too
    assert tiny.padded and trl_kwargs(RL_FIELDS, tiny)["keep_groups"] == 8


def test_layout_over_ranks_and_its_errors():
    assert get_config("sft", "full", world_size=32).gradient_accumulation_steps == 8  # 256 rows = 1 x 8 x 32
    tiny = get_config("rl_math", "tiny", world_size=2)  # 8 rollouts, no accumulation: 4 per rank
    assert (tiny.gradient_accumulation_steps, tiny.per_device_rollouts) == (1, 4)
    assert get_config("sft", "tiny", world_size=2).per_device_batch_size == 32
    with pytest.raises(ValueError, match="does not split over 24 ranks"):  # LayoutError is a ValueError
        get_config("rl_math", "full", world_size=24)
    with pytest.raises(ValueError, match="does not split over 3 ranks"):
        get_config("sft", "ci", world_size=3)
    with pytest.raises(ValueError, match="no rank layout"):
        get_config("eval", "full", world_size=2)
    with pytest.raises(ValueError, match="already laid out"):
        spread(get_config("rl_math", "full", world_size=2), 2)


def _hash_before_added(cfg) -> str:
    """The hash ``cfg`` had before its ``added`` fields existed: base.config_hash's payload without them."""
    hashed = {f.name for f in dataclasses.fields(cfg)
              if f.metadata.get("kind") not in ("layout", "shown") and f.metadata.get("hashed") != IF_CHANGED}
    values = {k: v for k, v in to_dict(cfg).items() if k in hashed}
    payload = json.dumps({"class": type(cfg).__name__, "values": values}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


ADDED = [(stage, f.name) for stage in sorted(STAGES) for f in dataclasses.fields(type(get_config(stage, "ci")))
         if f.metadata.get("hashed") == IF_CHANGED]


def test_added_fields_exist():
    assert ("rl_math", "code_timeout_s") in ADDED and ("rl_math", "long_prompts") in ADDED


@pytest.mark.parametrize("stage,name", ADDED)
def test_an_added_field_enters_the_hash_only_off_its_default(stage, name):
    for preset in ("ci", "tiny"):
        cfg = get_config(stage, preset)
        default = next(f.default for f in dataclasses.fields(cfg) if f.name == name)
        assert getattr(cfg, name) == default, f"{stage}/{preset} moves the stored hash with {name}"
        assert config_hash(cfg) == _hash_before_added(cfg)
    other = {"code_timeout_s": 35.0, "long_prompts": "truncate_left", "keep_checkpoints": 2,
             "random_reward": True, "random_format": True, "dgpo_n": 2.0, "dgpo_m": 3.0}[name]
    needs = {"random_reward": True} if name == "random_format" else {}  # its only valid company
    base = get_config(stage, "tiny", **needs)
    cfg = get_config(stage, "tiny", **needs, **{name: other})
    assert config_hash(cfg) not in (config_hash(base), _hash_before_added(cfg))


def test_trl_field_table_names_each_value_once():
    cfg = get_config("rl_math", "tiny")
    kw = trl_kwargs(RL_FIELDS, cfg)
    assert (kw["loss_type"], kw["clip_low"], kw["beta"]) == ("gppo", 0.2, 0.0)  # GPPOConfig takes RLConfig's names
    assert kw["max_steps"] == cfg.max_steps * cfg.updates_per_step  # RL steps -> optimizer updates
    assert trl_kwargs(SFT_FIELDS, get_config("sft", "tiny"))["per_device_train_batch_size"] == 64
    assert check_trl_only({"vllm_server_host": "h"}, RL_FIELDS, "RLConfig") == {"vllm_server_host": "h"}
    with pytest.raises(KeyError, match="max_steps"):
        check_trl_only({"max_steps": 3}, RL_FIELDS, "RLConfig")


def test_config_cli_prints_the_layout(capsys):
    config_cli(["rl_code", "full", "--world-size", "32", "--show", "gradient_accumulation_steps",
                "per_device_rollouts"])
    assert capsys.readouterr().out.strip() == "gradient_accumulation_steps=8 per_device_rollouts=1"
    with pytest.raises(SystemExit):
        config_cli(["rl_math", "full", "--set", "no_such_field=1"])


def test_describe_puts_each_shown_field_on_its_own_line():
    cfg = get_config("rl_math", "tiny")
    text = describe(cfg)
    lines = text.splitlines()
    assert lines[0] == "RLConfig"
    shown = [f.name for f in dataclasses.fields(cfg) if f.repr]
    assert [line.split()[0] for line in lines[1:] if not line.startswith(" " * 4)] == shown
    assert "world_size" not in text  # a layout field stays out, as in the repr
    assert all(len(line) <= 110 for line in lines)


def test_gpu_preset_is_the_cost_tables():
    """docs/full_scale.md §8: 40 RL steps of 32 prompts x 8 rollouts, 2x oversampled (512 generated, 256 trained in
    8 updates), rollouts up to 8,192 tokens, fp32 master weights (no DeepSpeed), one colocated engine, TP 1; the
    pinned Qwen3-1.7B read by the same evaluation harness on MATH-500 and AIME 2024/2025."""
    rl, model, ev = get_config("rl_math", "gpu"), get_config("model", "gpu"), get_config("eval", "gpu")
    assert rl.max_steps == 40 and rl.prompts_per_step * rl.num_generations * rl.oversample == 512
    assert rl.updates_per_step == 8 and rl.mini_batch_rollouts * rl.updates_per_step == 256
    assert (rl.max_prompt_length, rl.max_completion_length, rl.deepspeed, rl.vllm_tensor_parallel_size) == (
        1024, 8192, None, 1)
    assert rl.bf16 and not rl.use_cpu and rl.use_vllm and rl.keep_checkpoints == 2
    assert (model.hub_id, model.dtype, len(model.hub_revision)) == ("Qwen/Qwen3-1.7B", "float32", 40)
    assert ev.models == (model.hub_id,) and ev.model_revisions == (model.hub_revision,)
    assert ev.benchmarks == ("math500", "aime24", "aime25") and ev.max_model_len == 1024 + 8192


@pytest.mark.parametrize("words, says", [
    (["--set", "learning_rate=fast"], "learning_rate is a number"),
    (["--set", "learning_rate"], "write NAME=VALUE"),
    (["--set", "clip_high=abc"], "clip_high is a number"),
    (["--set", "max_steps=-5"], "max_steps must be >= 1"),
    (["--set", "max_steps=2.5"], "max_steps is a whole number"),
    (["--set", "learning_rate=0"], "learning_rate must be > 0"),
    (["--set", "top_p=1.5"], "top_p lies in [0, 1]"),
    (["--set", "use_vllm=maybe"], "use_vllm is true or false"),
    (["--set", "learnig_rate=1e-5"], "did you mean learning_rate"),
    (["--show", "learnig_rate"], "did you mean learning_rate"),
])
def test_config_cli_stops_on_a_bad_name_or_value_with_one_line(capsys, words, says):
    with pytest.raises(SystemExit) as stop:
        config_cli(["rl_math", "tiny", *words])
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_config_cli_reads_each_value_as_its_field_type(capsys):
    config_cli(["rl_math", "tiny", "--set", "learning_rate=2e-5", "dual_clip=null", "loss_type=cispo",
                "use_vllm=true", "max_steps=7", "--show", "learning_rate", "dual_clip", "loss_type", "use_vllm",
                "max_steps"])
    assert capsys.readouterr().out.split() == ["learning_rate=2e-05", "dual_clip=None", "loss_type=cispo",
                                               "use_vllm=True", "max_steps=7"]
    config_cli(["eval", "tiny", "--set", 'benchmarks=["tiny_aime"]', "top_k=-1", "--show", "benchmarks", "top_k"])
    assert capsys.readouterr().out.split() == ["benchmarks=('tiny_aime',)", "top_k=-1"]


def test_every_preset_value_passes_the_override_check():
    """The ranges of ``typed_overrides`` admit every value the presets themselves use."""
    for stage, presets in STAGES.items():
        for preset, cfg in presets.items():
            for name, value in to_dict(cfg).items():
                text = json.dumps(value) if not isinstance(value, str) else value
                if value == "":
                    continue
                typed_overrides(type(cfg), [f"{name}={text}"])


def test_config_cli_help_has_no_markup(capsys):
    with pytest.raises(SystemExit):
        config_cli(["--help"])
    assert "``" not in capsys.readouterr().out


def test_a_rerun_writes_its_results_runs_and_figures_beside_the_study(monkeypatch, tmp_path):
    from klear_lib import paths
    from klear_lib.configs import recipe

    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    study = recipe("tiny")
    rerun = dataclasses.replace(study, results_subdir="rerun")
    assert (study.results, study.runs) == (tmp_path / "tiny", tmp_path / "tiny" / "runs")
    assert (rerun.results, rerun.runs) == (tmp_path / "tiny" / "rerun", tmp_path / "tiny" / "rerun" / "runs")
    assert rerun.figure("rl_fig2_heldout") == tmp_path / "tiny" / "rerun" / "figures" / "tiny_rl_fig2_heldout.png"
    assert rerun.artifacts == study.artifacts and rerun.rl_math == study.rl_math  # the same runs, filed apart
    with pytest.raises(KeyError, match="no stage 'results_subdir'"):
        study.replace(results_subdir={})
