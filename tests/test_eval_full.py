"""The per-budget evaluation command (``klear_lib.evaluation.full``): the config at each budget, the split of the
problems over tensor-parallel engines, the dry run, and engines' shares merged into the samples of one run."""
from __future__ import annotations

import functools
import importlib.util
from collections import Counter
import json
import sys

import pytest

from klear_lib.configs import algorithm_fields, config_hash, get_config, recipe
from klear_lib.configs.eval import EvalConfig, budget_config
from klear_lib.evaluation import dp_plan, full, harness
from klear_lib.seeding import stable_seed


def test_each_budget_sets_the_lengths_and_keeps_the_paper_sampling():
    short, long = budget_config("32k"), budget_config("64k")
    assert (short.max_new_tokens, short.max_model_len, short.hf_overrides) == (32768, 36864, None)
    assert (long.max_new_tokens, long.max_model_len) == (65536, 81920)
    assert long.hf_overrides["rope_scaling"] == {"rope_type": "yarn", "factor": 2.5,
                                                 "original_max_position_embeddings": 32768}
    for cfg in (short, long, budget_config("64k", official_sampling=True)):
        assert (cfg.temperature, cfg.top_p, cfg.k_math, cfg.k_code, cfg.tensor_parallel_size) == (0.6, 0.95, 64, 8, 2)
        assert [getattr(cfg, n) for n in algorithm_fields(EvalConfig)] == \
            [getattr(get_config("eval", "ci"), n) for n in algorithm_fields(EvalConfig)]
    assert (short.top_k, short.repetition_penalty) == (-1, 1.0)
    official = budget_config("32k", official_sampling=True)
    assert (official.top_k, official.repetition_penalty) == (20, 1.05)
    assert short == get_config("eval", "full")  # the 32K budget is the full preset as it was
    assert len({config_hash(c) for c in (short, long, official)}) == 3
    with pytest.raises(KeyError, match="unknown length budget '128k'"):
        budget_config("128k")


def test_flags_and_the_paper_own_their_fields():
    with pytest.raises(ValueError, match="max_new_tokens is set by --budget, temperature is set by nothing"):
        full.eval_config("32k", False, None, {"max_new_tokens": 1000, "temperature": 1.0})
    assert full.eval_config("32k", False, 4, {"chunk_problems": 10}).tensor_parallel_size == 4


def test_engines_are_tensor_parallel_groups_of_the_gpus_given():
    assert dp_plan.engine_groups(8, 2) == [["0", "1"], ["2", "3"], ["4", "5"], ["6", "7"]]
    assert dp_plan.engine_groups(4, 2, visible="3,5,6,7") == [["3", "5"], ["6", "7"]]
    assert dp_plan.engine_groups(1, 1) == [["0"]]
    with pytest.raises(ValueError, match="--gpus 6 does not split into tensor-parallel groups of --tp 4"):
        dp_plan.engine_groups(6, 4)
    with pytest.raises(ValueError, match="names 2 GPUs"):
        dp_plan.engine_groups(4, 2, visible="0,1")


@pytest.mark.parametrize("engines", [1, 3, 4, 16])
def test_the_split_runs_every_chunk_once_and_balances_the_load(engines):
    cfg = budget_config("64k")
    models = [("Kwai-Klear/Klear-Reasoner-8B", "main"), ("Kwai-Klear/Klear-Reasoner-8B-SFT", "main")]
    sizes = {"aime24": 30, "aime25": 30, "hmmt25": 30, "lcb_v5": 279, "lcb_v6": 175}
    units = dp_plan.work_units(models, sizes, cfg)
    assert len(units) == 2 * (3 + 10 + 6)
    assert {u.cost for u in units if u.benchmark == "aime24"} == {30 * 64}
    assert [u.last - u.first for u in units if u.benchmark == "lcb_v5"][-1] == 9  # the last chunk: 279 = 9 x 30 + 9
    shares = dp_plan.deal(units, engines)
    assert Counter(u for s in shares for u in s) == Counter(units) and len(shares) == engines
    loads = [sum(u.cost for u in s) for s in shares]
    assert max(loads) <= sum(loads) / engines + max(u.cost for u in units)
    assert shares == dp_plan.deal(list(reversed(units)), engines)  # the same deal whatever the order given


def test_the_dry_run_prints_engines_commands_and_split_and_writes_nothing(tmp_path, capsys):
    full.main(["--budget", "64k", "--gpus", "8", "--tp", "2", "--out", str(tmp_path), "--dry-run"])
    out = capsys.readouterr().out
    root = full.run_root(tmp_path, "64k", budget_config("64k"))
    for e, gpus in enumerate(("0,1", "2,3", "4,5", "6,7")):
        assert f"engine {e}: CUDA_VISIBLE_DEVICES={gpus} {sys.executable} -m klear_lib.evaluation.full " \
               f"--engine {e} --plan {root / 'plan.json'}" in out
    assert '"max_new_tokens": 65536' in out and '"yarn_64k": true' in out and '"temperature": 0.6' in out
    assert "lcb_v6: size unknown until loaded" in out and "Kwai-Klear/Klear-Reasoner-8B aime24: chunks [0]" in out
    assert not tmp_path.joinpath(root.name).exists()


def math_row(i: int) -> dict:
    return {"data_source": "toy", "prompt": [{"role": "user", "content": f"q{i}"}], "ability": "math",
            "reward_model": {"ground_truth": str(i % 3), "style": "rule"}, "extra_info": {"id": f"p{i}"}}


def seeded(model_path, prompts, *, n, seed, **kwargs):
    """Answers that depend on the call's seed, as a sampler's do."""
    return [[f"<think>\n{seed % 97}\n</think>\n\\boxed{{{(seed + j) % 3}}}" for j in range(n)] for _ in prompts]


@pytest.fixture
def offline_engines(monkeypatch):
    class Tok:
        def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
            return f"<|im_start|>user\n{messages[0]['content']}<|im_end|>\n<|im_start|>assistant\n"
    monkeypatch.setattr(harness, "_tokenizer", lambda path, rev: Tok())
    monkeypatch.setattr(full, "evaluate", functools.partial(harness.evaluate, generate_fn=seeded))
    monkeypatch.setattr(full, "load_rows", lambda name, preset: [math_row(i) for i in range(5 if name == "aime24"
                                                                                            else 3)])


def _run(tmp_path, gpus: int, tp: int) -> tuple[dict, object]:
    """The command's steps in this process: plan, every engine's share, merge (``launch`` starts processes)."""
    args = full._parser().parse_args(["--budget", "32k", "--gpus", str(gpus), "--tp", str(tp), "--out",
                                      str(tmp_path), "--models", "m/one@r1", "m/two", "--benchmarks", "aime24",
                                      "hmmt25", "--set", "k_math=3", "chunk_problems=2"])
    cfg = full.eval_config(args.budget, False, tp, {"k_math": 3, "chunk_problems": 2})
    root = full.run_root(tmp_path, "32k", cfg)
    plan = full.make_plan(args, cfg, *full.problem_sizes(root, args.benchmarks, load=True))
    (root / "plan.json").write_text(json.dumps(plan))
    for eng in plan["engines"]:
        full.run_engine(root / "plan.json", eng["engine"])
    return plan, full.merge(plan, root)


def test_engine_shares_merge_into_the_samples_of_a_single_engine(tmp_path, offline_engines):
    plan, table = _run(tmp_path / "four", gpus=4, tp=1)
    assert len(plan["engines"]) == 4 and all(eng["units"] for eng in plan["engines"])
    _, alone = _run(tmp_path / "one", gpus=1, tp=1)
    root4, root1 = (full.run_root(tmp_path / d, "32k", full.eval_config("32k", False, 1, {"k_math": 3,
                                                                                           "chunk_problems": 2}))
                    for d in ("four", "one"))
    merged = sorted(p.name for p in (root4 / "samples").iterdir())
    assert merged == ["m--one__aime24.samples.jsonl", "m--one__hmmt25.samples.jsonl",
                      "m--two__aime24.samples.jsonl", "m--two__hmmt25.samples.jsonl"]
    for name in merged:
        assert (root4 / "samples" / name).read_bytes() == (root1 / "samples" / name).read_bytes()
    assert table.equals(alone)
    lines = [json.loads(ln) for ln in (root4 / "samples" / merged[0]).read_text().splitlines()]
    assert [(r["problem_index"], r["sample"]) for r in lines] == [(i, j) for i in range(5) for j in range(3)]
    seed = stable_seed(0, "eval", "aime24", "m/one", 1, 3)  # chunk 1 = problems 2-3, drawn by whichever engine
    assert lines[6]["response"].startswith(f"<think>\n{seed % 97}\n")
    assert set(table["metric"]) == {"avg@k", "pass@k"} and set(table["model"]) == {"m/one", "m/two"}
    assert table["config_hash"].nunique() == 1 and set(table["n_problems"]) == {5, 3}


def test_a_failed_engine_is_named_with_its_log(tmp_path, monkeypatch):
    plan = {"budget": "32k", "official_sampling": False, "tp": 1, "set": {}, "sizes": {}, "models": [],
            "config_hash": config_hash(budget_config("32k", tensor_parallel_size=1)),
            "engines": [{"engine": 0, "gpus": ["0"], "units": []}, {"engine": 1, "gpus": ["1"], "units": []}]}
    monkeypatch.setattr(full, "POLL_S", 0.05)
    monkeypatch.setattr(full, "engine_command", lambda path, e: [sys.executable, "-c", f"raise SystemExit({e})"])
    with pytest.raises(RuntimeError, match=r"engine\(s\) \[1\] failed: see .*engine-1.log; the same command"):
        full.launch(plan, tmp_path / "plan.json")


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
def test_vllm_starts_the_64k_engine_on_a_qwen3_shaped_config(tmp_path):
    """vLLM takes max_model_len 81920 with the 64K override on a config with Qwen3-8B's 40960 positions (with
    rope_scaling alone it refuses: configs/eval.py). The tiny base model, given Qwen3-8B's positions and rope_theta."""
    import shutil

    from klear_lib.generation import generate
    from klear_lib.models import load_or_build

    model = shutil.copytree(load_or_build(recipe("tiny")), tmp_path / "qwen3_shaped")
    config = json.loads((model / "config.json").read_text())
    config.update(max_position_embeddings=40960, rope_parameters={"rope_theta": 1000000.0, "rope_type": "default"})
    (model / "config.json").write_text(json.dumps(config))
    cfg = budget_config("64k")
    outs = generate(str(model), ["<|im_start|>user\n1+1<|im_end|>\n<|im_start|>assistant\n"], n=2, temperature=0.6,
                    top_p=0.95, max_new_tokens=8, seed=0, backend="vllm", max_model_len=cfg.max_model_len,
                    hf_overrides=cfg.hf_overrides)
    assert len(outs) == 1 and len(outs[0]) == 2
