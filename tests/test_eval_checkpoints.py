"""The stage registry: pointer files, discovery of complete model folders, and the always-present base."""
from __future__ import annotations

import pytest

from klear_lib import artifacts
from klear_lib.configs import get_config, recipe
from klear_lib.evaluation import checkpoints as ck


def fake_model(path):
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    artifacts.mark_complete(path)
    return path


def test_unknown_stage_raises():
    with pytest.raises(KeyError, match="unknown stage"):
        ck.stage_checkpoint("dpo", recipe("ci"))


def test_missing_stage_is_none_and_discovery_needs_done(tmp_path, monkeypatch):
    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path))
    assert ck.stage_checkpoint("sft", recipe("ci")) is None
    half = tmp_path / "ci" / "sft" / "run1" / "final"
    half.mkdir(parents=True)
    (half / "config.json").write_text("{}")
    assert ck.stage_checkpoint("sft", recipe("ci")) is None  # no DONE marker: never reused
    artifacts.mark_complete(half)
    assert ck.stage_checkpoint("sft", recipe("ci")) == str(half)


def test_registered_pointer_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path))
    fake_model(tmp_path / "ci" / "rl_math" / "found" / "final")
    chosen = fake_model(tmp_path / "elsewhere" / "model")
    ck.register_stage_checkpoint("rl_math", recipe("ci"), chosen)
    assert ck.stage_checkpoint("rl_math", recipe("ci")) == str(chosen.resolve())
    assert ck.checkpoint_label(str(chosen)) == "elsewhere/model"
    assert ck.checkpoint_label("Kwai-Klear/Klear-Reasoner-8B") == "Kwai-Klear/Klear-Reasoner-8B"


def test_base_is_always_available(ci_model_path):
    assert ck.available_stages(recipe("ci"))["base"] == ci_model_path


def test_only_the_pipelines_own_rl_stage_registers(tmp_path, monkeypatch):
    """An ablation or attempt run must never become the model notebook 04 evaluates as the stage."""
    from klear_lib import pipeline

    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path))
    rows = [{"id": "r1"}]
    key = pipeline.stage_key(get_config("rl_math", "ci"), rows, "init")
    final = fake_model(tmp_path / "ci" / "rl_math" / key / "final")  # finished: rl_stage reuses it
    newer = fake_model(tmp_path / "ci" / "rl_math" / "zz_newer_attempt" / "final")
    assert pipeline.rl_stage(recipe("ci"), "init", "math", rows, name="attempts/x") == final
    assert ck.stage_checkpoint("rl_math", recipe("ci")) == str(newer)  # unregistered: discovery takes the newest
    assert pipeline.rl_stage(recipe("ci"), "init", "math", rows) == final
    assert ck.stage_checkpoint("rl_math", recipe("ci")) == str(final.resolve())


def test_keys_and_pointers_do_not_depend_on_where_the_store_lives(tmp_path, monkeypatch):
    """A fresh clone (its own store, another absolute path) must name the same stage and samples alike."""
    from klear_lib import pipeline
    from klear_lib.evaluation import harness

    cfg, rows, keys, samples = get_config("rl_math", "ci"), [{"id": "r1"}], [], []
    for store in ("clone_a", "clone_b"):
        monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path / store))
        parent = fake_model(tmp_path / store / "ci" / "sft" / "k" / "final")
        keys.append(pipeline.stage_key(cfg, rows, parent))
        samples.append(harness.samples_path(tmp_path, "toy_math", "rl_math", str(parent)).name)
        ck.register_stage_checkpoint("sft", recipe("ci"), parent)
        assert (tmp_path / store / "ci" / "checkpoints" / "sft.txt").read_text() == "ci/sft/k/final"
        assert ck.stage_checkpoint("sft", recipe("ci")) == str(parent.resolve())
    assert keys[0] == keys[1] and samples[0] == samples[1]
    outside = [fake_model(tmp_path / name / "final") for name in ("x", "y")]  # outside the store: full path
    assert pipeline.stage_key(cfg, rows, outside[0]) != pipeline.stage_key(cfg, rows, outside[1])
    assert pipeline.stage_key(cfg, rows, outside[0]) != keys[1]


def test_a_stage_folder_refuses_rows_whose_contents_changed_under_the_same_ids(tmp_path, monkeypatch):
    """The stage key hashes row ids only; the content stamp turns a silent reuse into a clear error."""
    from klear_lib import pipeline

    monkeypatch.setenv("KLEAR_ARTIFACTS", str(tmp_path))
    rows = [{"id": "r1", "prompt": "1+1"}]
    key = pipeline.stage_key(get_config("rl_math", "ci"), rows, "init")
    final = fake_model(tmp_path / "ci" / "rl_math" / key / "final")
    assert pipeline.rl_stage(recipe("ci"), "init", "math", rows, name="attempts/x") == final   # stamps the folder
    assert pipeline.rl_stage(recipe("ci"), "init", "math", [dict(r) for r in rows], name="attempts/x") == final
    changed = [{"id": "r1", "prompt": "1+2"}]
    assert pipeline.stage_key(get_config("rl_math", "ci"), changed, "init") == key
    with pytest.raises(ValueError, match="these ids but other contents"):
        pipeline.rl_stage(recipe("ci"), "init", "math", changed, name="attempts/x")


def test_the_random_reward_control_trains_each_seeds_two_stages_again_and_registers_none(monkeypatch):
    from klear_lib import pipeline

    calls = []

    def fake_rl_stage(rec, init, reward, rows=None, name=None):
        cfg = rec.rl(reward)
        calls.append((reward, cfg.seed, cfg.random_reward, str(init), name))
        assert not cfg.random_format
        return f"{'random' if cfg.random_reward else 'task'}-{reward}-{cfg.seed}"

    monkeypatch.setattr(pipeline, "rl_stage", fake_rl_stage)
    out = pipeline.rl_seeds(recipe("ci"), "sft", [0, 1], main_seed=0, control="blind")
    assert out[0] == {"rl_math": "task-math-0", "rl_code": "task-code-0", "random_rl_math": "random-math-0",
                      "random_rl_code": "random-code-0"}
    assert set(out[1]) == set(out[0])
    # every code stage starts from its own arm's math stage; only the main seed's task stages are the pipeline's own
    assert ("code", 1, True, "random-math-1", "random_rl_code-s1") in calls
    assert ("math", 0, True, "sft", "random_rl_math") in calls and ("math", 0, False, "sft", None) in calls
    assert [c[4] for c in calls if c[4] is None] == [None, None] and len(calls) == 8
    assert set(pipeline.rl_seeds(recipe("ci"), "sft", [0], main_seed=0)[0]) == {"rl_math", "rl_code"}
    with pytest.raises(ValueError, match="control='coin'"):
        pipeline.rl_seeds(recipe("ci"), "sft", [0], control="coin")


def test_the_format_keeping_control_sets_random_format_on_its_arm_only(monkeypatch):
    from klear_lib import pipeline

    seen = []
    monkeypatch.setattr(pipeline, "rl_stage", lambda rec, init, reward, rows=None, name=None: seen.append(
        (rec.rl(reward).random_reward, rec.rl(reward).random_format)) or f"{reward}-{len(seen)}")
    pipeline.rl_seeds(recipe("ci"), "sft", [3], main_seed=None, control="format")
    assert seen == [(False, False), (False, False), (True, True), (True, True)]
