"""The avg@k harness: samples stored as jsonl, resumption, the shared judges, and the transformers backend."""
from __future__ import annotations

import json
import logging
import shutil

import pandas as pd
import pytest

from klear_lib import tables
from klear_lib.configs import get_config
from klear_lib.evaluation import harness
from klear_lib.evaluation.benchmarks import BenchmarkSpec
from klear_lib.evaluation.metrics import bootstrap_ci
from klear_lib.generation import generate, prefill_of
from klear_lib.results import EVAL
from klear_lib.seeding import stable_seed

SPEC = BenchmarkSpec("toy_math", "math", None, "world")
CODE_SPEC = BenchmarkSpec("toy_code", "code", None, "world")


def math_row(i: int, answer: int) -> dict:
    return {"data_source": "toy", "prompt": [{"role": "user", "content": f"q{i}"}], "ability": "math",
            "reward_model": {"ground_truth": str(answer), "style": "rule"}, "extra_info": {"id": f"p{i}"}}


ROWS = [math_row(i, i) for i in range(5)]


class FakeGenerator:
    """Answers problem i correctly in sample slots j < i (so problem i has min(i, k) correct of k)."""

    def __init__(self):
        self.calls: list[tuple[int, int]] = []

    def __call__(self, model_path, prompts, *, n, **kwargs):
        self.calls.append((len(prompts), n))
        outs = []
        for p in prompts:
            i = int(p.split("q")[-1].split("<")[0])
            outs.append([f"<think>\nx\n</think>\n\\boxed{{{i if j < i else -1}}}" for j in range(n)])
        return outs


@pytest.fixture
def cfg():
    return get_config("eval", "ci", k_math=4, max_problems=None, chunk_problems=2)


@pytest.fixture
def toy_tokenizer(monkeypatch):
    class Tok:
        def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
            return f"<|im_start|>user\n{messages[0]['content']}<|im_end|>\n<|im_start|>assistant\n"
    monkeypatch.setattr(harness, "_tokenizer", lambda path, rev: Tok())


def test_evaluate_judges_and_stores_every_sample(tmp_path, cfg, toy_tokenizer):
    gen = FakeGenerator()
    df = harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path, stage="t", generate_fn=gen)
    assert len(df) == 20 and df.groupby("problem_index")["correct"].sum().tolist() == [0, 1, 2, 3, 4]
    assert set(df["reward"]) == {1.0, -1.0}
    lines = harness.samples_path(tmp_path, "toy_math", "t", "unused").read_text().splitlines()
    assert len(lines) == 20 and {"response", "correct", "reward", "problem_id", "sample"} <= set(json.loads(lines[0]))
    assert gen.calls == [(2, 4), (2, 4), (1, 4)]  # chunks of 2 problems


def test_evaluate_resumes_without_regenerating(tmp_path, cfg, toy_tokenizer):
    harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path, stage="t", generate_fn=FakeGenerator())
    path = harness.samples_path(tmp_path, "toy_math", "t", "unused")
    lines = path.read_text().splitlines()
    kept = [ln for ln in lines if json.loads(ln)["problem_id"] != "p3"] + [lines[-1][:20]]  # drop p3 + torn line
    path.write_text("\n".join(kept) + "\n")
    gen = FakeGenerator()
    df = harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path, stage="t", generate_fn=gen)
    assert gen.calls == [(2, 4)] and len(df) == 20  # the chunk of p2 and p3, whole
    assert df.groupby("problem_index")["correct"].sum().tolist() == [0, 1, 2, 3, 4]
    again = FakeGenerator()
    harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path, stage="t", generate_fn=again)
    assert again.calls == []


def test_a_partial_chunk_is_generated_again_whole_and_replaced(tmp_path, cfg, toy_tokenizer):
    """Generating only the missing samples would need per-sample seeds, which vLLM on CPU lacks: the chunk's
    call is made again, with its own seed, and its partial records leave the file."""
    harness.evaluate("unused", SPEC, ROWS[:1], cfg, tmp_path, stage="t", generate_fn=FakeGenerator())
    path = harness.samples_path(tmp_path, "toy_math", "t", "unused")
    whole = path.read_bytes()
    path.write_text("\n".join(path.read_text().splitlines()[:3]) + "\n")  # 3 of 4 samples kept
    gen = FakeGenerator()
    harness.evaluate("unused", SPEC, ROWS[:1], cfg, tmp_path, stage="t", generate_fn=gen)
    assert gen.calls == [(1, 4)] and path.read_bytes() == whole


class SeededGenerator:
    """Answers that depend on the call's seed (as a real sampler's do), recording (prompts, n, seed) per call."""

    def __init__(self):
        self.calls: list[tuple[int, int, int]] = []

    def __call__(self, model_path, prompts, *, n, seed, **kwargs):
        self.calls.append((len(prompts), n, seed))
        return [[f"<think>\n{seed % 97}\n</think>\n\\boxed{{{(seed + j) % 3}}}" for j in range(n)] for _ in prompts]


def chunk_seed(cfg, chunk: int, k: int = 4) -> int:
    """The seed of one chunk's call: what the harness used before fixed chunks, in an uninterrupted run."""
    return stable_seed(cfg.seed, "eval", "toy_math", "t", chunk, k)


def test_a_fresh_run_seeds_each_chunk_as_before(tmp_path, cfg, toy_tokenizer):
    gen = SeededGenerator()
    harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path, stage="t", generate_fn=gen)
    assert gen.calls == [(2, 4, chunk_seed(cfg, 0)), (2, 4, chunk_seed(cfg, 1)), (1, 4, chunk_seed(cfg, 2))]


def test_a_resumed_run_draws_the_samples_of_an_uninterrupted_one(tmp_path, cfg, toy_tokenizer):
    """The seed comes from the chunk's fixed index, not its place among the chunks still to do."""
    harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path / "full", stage="t", generate_fn=SeededGenerator())
    full = harness.samples_path(tmp_path / "full", "toy_math", "t", "unused")
    path = harness.samples_path(tmp_path / "cut", "toy_math", "t", "unused")
    path.parent.mkdir()
    path.write_text("".join(full.read_text().splitlines(keepends=True)[:9]))  # chunk 0, one sample of chunk 1
    gen = SeededGenerator()
    harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path / "cut", stage="t", generate_fn=gen)
    assert gen.calls == [(2, 4, chunk_seed(cfg, 1)), (1, 4, chunk_seed(cfg, 2))]
    assert path.read_bytes() == full.read_bytes()


def test_engines_sharing_the_chunks_draw_the_samples_of_one_run(tmp_path, cfg, toy_tokenizer):
    """A data-parallel engine evaluates its chunks only (``chunks``), each with the seed and problem indices the
    chunk has in a single run, so the shares together are that run's samples."""
    harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path / "one", stage="t", generate_fn=SeededGenerator())
    whole = harness.read_samples(harness.samples_path(tmp_path / "one", "toy_math", "t", "unused"))
    shares, gens = {}, {}
    for engine, mine in (("e0", [0, 2]), ("e1", [1])):
        gens[engine] = SeededGenerator()
        df = harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path / engine, stage="t", generate_fn=gens[engine],
                              chunks=mine)
        shares.update(harness.read_samples(harness.samples_path(tmp_path / engine, "toy_math", "t", "unused")))
        assert sorted(set(df["problem_index"])) == [i for c in mine for i in range(2 * c, min(2 * c + 2, 5))]
    assert [s for _, _, s in gens["e0"].calls] == [chunk_seed(cfg, 0), chunk_seed(cfg, 2)]
    assert shares == whole
    with pytest.raises(ValueError, match="toy_math: chunks \\[3\\] do not exist: 5 problems make 3 chunks"):
        harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path / "e2", stage="t", generate_fn=SeededGenerator(),
                         chunks=[3])


def test_a_torn_last_line_is_dropped_and_the_file_rewritten_clean(tmp_path, cfg, toy_tokenizer, caplog):
    """Before, the next append continued the torn line, the joined line did not parse and the run ended in a
    ``KeyError`` for a sample it had just generated."""
    harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path, stage="t", generate_fn=SeededGenerator())
    path = harness.samples_path(tmp_path, "toy_math", "t", "unused")
    whole = path.read_bytes()
    path.write_bytes(whole[:-40])  # the last record cut, no newline
    with caplog.at_level(logging.WARNING):
        df = harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path, stage="t", generate_fn=SeededGenerator())
    assert f"{path}: dropped 1 unparsable line(s)" in caplog.text
    assert len(df) == 20 and path.read_bytes() == whole


def test_summary_rows_follow_the_eval_schema(tmp_path, cfg, toy_tokenizer):
    import pandas as pd

    df = harness.evaluate("unused", SPEC, ROWS, cfg, tmp_path, stage="t", generate_fn=FakeGenerator())
    rows = harness.summarize(df, stage="t", benchmark="toy_math", seed=0, config_hash="h")
    assert [r["metric"] for r in rows] == ["avg@k", "pass@k"] and rows[0]["k"] == 4
    assert rows[0]["mean"] == pytest.approx((0 + 0.25 + 0.5 + 0.75 + 1) / 5) and rows[1]["mean"] == pytest.approx(0.8)
    rates = [0, 0.25, 0.5, 0.75, 1]  # the bootstrap eval.csv was drawn with: seeded by (seed, stage, benchmark, metric)
    assert (rows[0]["ci_low"], rows[0]["ci_high"]) == bootstrap_ci(rates, stable_seed(0, "t", "toy_math", "avg@4"))
    tables.validate(EVAL, pd.DataFrame(rows))


def test_prefilled_think_tag_is_judged_with_the_response():
    assert prefill_of("<|im_start|>assistant\n<think>\n") == "<think>\n"
    assert prefill_of("<|im_start|>assistant\n") == ""


@pytest.mark.skipif(shutil.which("firejail") is None, reason="firejail is not installed")
def test_code_samples_run_in_the_sandbox(tmp_path, cfg, toy_tokenizer):
    row = {"data_source": "toy", "prompt": [{"role": "user", "content": "q0"}], "ability": "code",
           "reward_model": {"ground_truth": json.dumps({"inputs": ["2\n", "3\n"], "outputs": ["4\n", "9\n"]}),
                            "style": "rule"}, "extra_info": {"id": "c0"}}
    progs = ["print(int(input()) ** 2)", "print(4)"]

    def gen(model_path, prompts, *, n, **kw):
        return [[f"<think>\n</think>\n```python\n{progs[j % 2]}\n```" for j in range(n)] for _ in prompts]
    df = harness.evaluate("unused", CODE_SPEC, [row], get_config("eval", "ci", k_code=2), tmp_path, generate_fn=gen)
    assert df["correct"].tolist() == [True, False] and df["reward"].tolist() == [1.0, 0.0]


def test_repeated_code_completions_are_judged_once_and_share_the_verdict(tmp_path, toy_tokenizer, monkeypatch):
    row = {"data_source": "toy", "prompt": [{"role": "user", "content": "q0"}], "ability": "code",
           "reward_model": {"ground_truth": json.dumps({"inputs": ["2\n", "3\n"], "outputs": ["4\n", "9\n"]}),
                            "style": "rule"}, "extra_info": {"id": "c0"}}
    progs = ["print(int(input()) ** 2)", "print(4)", "print(int(input()) ** 2)", "print(int(input()) ** 2)"]
    sandboxed, real = [], harness.judge.verdict
    monkeypatch.setattr(harness.judge, "verdict", lambda text, *a: sandboxed.append(text) or real(text, *a))

    def gen(model_path, prompts, *, n, **kw):
        return [[f"<think>\n</think>\n```python\n{progs[j]}\n```" for j in range(n)] for _ in prompts]
    df = harness.evaluate("unused", CODE_SPEC, [row], get_config("eval", "ci", k_code=4), tmp_path, generate_fn=gen)
    assert len(sandboxed) == 2  # two distinct programs, four samples
    assert df["sample"].tolist() == [0, 1, 2, 3] and df["correct"].tolist() == [True, False, True, True]


def test_transformers_backend_returns_n_completions_reproducibly(ci_model_path):
    from klear_lib.models import load

    _, tok = load(ci_model_path)
    prompts = [tok.apply_chat_template([{"role": "user", "content": c}], tokenize=False, add_generation_prompt=True)
               for c in ("1+1", "2*3", "7-5")]
    kw = dict(n=3, temperature=0.6, top_p=0.95, max_new_tokens=12, seed=0, backend="transformers", batch_size=2)
    outs = generate(ci_model_path, prompts, **kw)
    assert [len(o) for o in outs] == [3, 3, 3] and all(isinstance(t, str) for o in outs for t in o)
    assert outs == generate(ci_model_path, prompts, **kw)
    assert outs != generate(ci_model_path, prompts, **{**kw, "seed": 1})
    with pytest.raises(ValueError, match="backend"):
        generate(ci_model_path, prompts, **{**kw, "backend": "tgi"})


def test_a_different_model_never_reuses_samples(tmp_path, cfg, toy_tokenizer):
    harness.evaluate("model-a", SPEC, ROWS[:2], cfg, tmp_path, stage="sft", generate_fn=FakeGenerator())
    gen = FakeGenerator()
    harness.evaluate("model-b", SPEC, ROWS[:2], cfg, tmp_path, stage="sft", generate_fn=gen)
    assert gen.calls == [(2, 4)]
    assert harness.samples_path(tmp_path, "toy_math", "sft", "model-a") != \
        harness.samples_path(tmp_path, "toy_math", "sft", "model-b")


def _samples(verdicts: dict[int, list[bool]]):
    import pandas as pd
    return pd.DataFrame([{"problem_index": i, "sample": s, "correct": c}
                         for i, row in verdicts.items() for s, c in enumerate(row)])


def test_stage_gains_pairs_stages_over_shared_problems():
    samples = {("sft", "bench"): _samples({0: [False, False], 1: [True, False], 2: [True, True]}),
               ("rl_math", "bench"): _samples({0: [True, False], 1: [True, True], 2: [True, True], 3: [True, True]}),
               ("rl_math", "other"): _samples({0: [True, True]})}  # no sft row for "other": no pair
    gains = harness.stage_gains(samples, seed=0)
    assert list(gains[["benchmark", "before", "after"]].itertuples(index=False, name=None)) == [
        ("bench", "sft", "rl_math")]
    row = gains.iloc[0]
    assert row.n_problems == 3 and row.gain == pytest.approx((0.5 + 0.5 + 0.0) / 3)  # problem 3 is not shared
    assert row.ci_low <= row.gain <= row.ci_high


def test_stage_gains_skip_stages_without_shared_problems():
    samples = {("sft", "bench"): _samples({0: [True]}), ("rl_math", "bench"): _samples({1: [True]})}
    assert harness.stage_gains(samples, seed=0).empty


def test_vllm_child_runs_the_engine_core_in_process_unless_told_otherwise(monkeypatch):
    from klear_lib.generation import vllm_env

    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    assert vllm_env()["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"  # repeatable scheduling (generation module doc)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    assert vllm_env()["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"


def test_seed_gains_average_the_rl_seeds_over_the_problems_they_share():
    from klear_lib.evaluation.harness import seed_gains
    sft = _samples({0: [False, False], 1: [True, False], 2: [False, False], 3: [True, True]})
    # seed 0 lifts problem 0 by a whole problem, seed 1 lifts problems 0 and 2 by half a problem each
    rl = {0: _samples({0: [True, True], 1: [True, False], 2: [False, False], 3: [True, True]}),
          1: _samples({0: [True, False], 1: [True, False], 2: [True, False], 3: [True, True]})}
    samples = {("sft", "b"): sft, ("rl_math", "b"): rl[0], ("rl_math-s1", "b"): rl[1]}
    stages = {0: {"rl_math": "rl_math"}, 1: {"rl_math": "rl_math-s1"}}
    got = seed_gains(samples, stages, seed=0, pairs=(("sft", "rl_math"),)).iloc[0]
    assert got["n_seeds"] == 2 and got["n_problems"] == 4 and got["per_seed"] == "0.2500;0.2500"
    assert got["gain"] == pytest.approx(0.25)
    assert got["seed_ci_low"] == pytest.approx(0.25) == got["seed_ci_high"]  # both seeds gain the same
    assert 0 <= got["ci_low"] < 0.25 < got["ci_high"] <= 1  # problems resampled too: the interval opens up
    pairs = (("sft", "rl_code"),)  # no such stage: no row
    assert seed_gains(samples, stages, seed=0, pairs=pairs).empty
    # the random-reward control (default pairs): its gain over SFT and each stage's gain over it, per seed
    control = {0: _samples({0: [True, False], 1: [True, False], 2: [False, False], 3: [True, True]}),
               1: _samples({0: [False, False], 1: [True, False], 2: [False, False], 3: [True, True]})}
    samples |= {("random_rl_math", "b"): control[0], ("random_rl_math-s1", "b"): control[1]}
    stages = {s: {**stages[s], "random_rl_math": "random_rl_math" + ("-s1" if s else "")} for s in stages}
    got = seed_gains(samples, stages, seed=0).set_index(["before", "after"])
    assert set(got.index) == {("sft", "rl_math"), ("sft", "random_rl_math"), ("random_rl_math", "rl_math")}
    assert got.loc[("sft", "random_rl_math"), "per_seed"] == "0.1250;0.0000"
    assert got.loc[("random_rl_math", "rl_math"), "per_seed"] == "0.1250;0.2500"  # the reward's part, per seed


def test_extraction_table_reads_the_stored_texts_strictly_and_leniently():
    """Strict avg@k is the stored verdicts; lenient re-reads prefill + response without the think-tag rule; code
    benchmarks are left out."""
    rows = {"tiny_aime": [{"extra_info": {"id": "p0"}, "reward_model": {"ground_truth": "42"}},
                          {"extra_info": {"id": "p1"}, "reward_model": {"ground_truth": "5"}}]}
    df = pd.DataFrame({"problem_index": [0, 0, 1, 1], "sample": [0, 1, 0, 1], "prefill": ["<think>\n"] * 4,
                       "response": ["x</think>\\boxed{42}", "\\boxed{42}", "\\boxed{5}", "x</think>\\boxed{6}"],
                       "correct": [True, False, False, False]})
    table = harness.extraction_table({("sft", "tiny_aime"): df, ("sft", "tiny_lcb"): df}, rows)
    assert table.to_dict("records") == [{"stage": "sft", "benchmark": "tiny_aime", "k": 2, "strict_pct": 25.0,
                                         "lenient_pct": 75.0}]
