"""results/reported.csv holds the paper's numbers with sources; eval.csv follows its schema and upserts by key;
the one table layer (klear_lib.tables) names the file and rows it refuses and writes atomically."""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from klear_lib import numerics, tables
from klear_lib.paths import RESULTS
from klear_lib.results import EVAL, EVAL_COLUMNS, load_reported, side_by_side


def row(**kw):
    base = {"stage": "sft", "benchmark": "tiny_aime", "metric": "avg@k", "k": 16, "mean": 0.25, "stderr": 0.05,
            "ci_low": 0.15, "ci_high": 0.35, "n_problems": 50, "n_samples": 800, "seed": 0,
            "config_hash": "abc123", "model": "m"}
    return {**base, **kw}


def test_reported_has_table1_and_every_ablation_table():
    df = load_reported()
    counts = df.groupby("table").size().to_dict()
    assert counts["Table 1"] == 55 and counts["Table 2"] == 18 and counts["Table 3"] == 9
    assert counts["Table 4"] == 24 and counts["Table 5"] == 16 and counts["Table 6"] == 10
    assert df["source"].str.startswith("docs/paper.md §").all()
    assert not df.duplicated(["table", "model_or_setting", "benchmark", "metric"]).any()


@pytest.mark.parametrize("model,bench,value", [
    ("Klear-Reasoner-8B (32K)", "aime24", 83.2), ("Klear-Reasoner-8B w/ 64K budget", "lcb_v6", 58.1),
    ("Klear-Reasoner-8B-SFT", "hmmt25", 57.6), ("Qwen3-8B", "lcb_v5", 57.5)])
def test_reported_table1_values(model, bench, value):
    df = load_reported()
    hit = df[(df.table == "Table 1") & (df.model_or_setting == model) & (df.benchmark == bench)]
    assert hit["value"].tolist() == [value]


def test_append_eval_rows_upserts_sorts_and_fixes_precision(tmp_path):
    path = tmp_path / "eval.csv"
    tables.upsert_file(EVAL, [row(stage="sft"), row(stage="base", mean=1 / 3, ci_low=0.2, ci_high=0.4)], path)
    tables.upsert_file(EVAL, [row(stage="sft", mean=0.5, ci_low=0.4, ci_high=0.6)], path)
    df = tables.read(EVAL, path)
    assert list(df.columns) == [*EVAL_COLUMNS, *tables.PROVENANCE] and df["stage"].tolist() == ["base", "sft"]
    assert df.loc[df.stage == "sft", "mean"].item() == 0.5
    assert "0.333333," in path.read_text() and "0.3333333" not in path.read_text()
    first = path.read_text()
    tables.upsert_file(EVAL, [row(stage="sft", mean=0.5, ci_low=0.4, ci_high=0.6)], path)
    assert path.read_text() == first  # rerun: byte-identical
    assert [p.name for p in tmp_path.iterdir()] == ["eval.csv"]  # no temporary file left beside it


def test_validate_eval_rejects_bad_rows():
    with pytest.raises(ValueError, match="miss columns"):
        tables.validate(EVAL, pd.DataFrame([{"stage": "x"}]))
    with pytest.raises(ValueError, match="duplicate"):
        tables.validate(EVAL, pd.DataFrame([row(), row()]))
    with pytest.raises(ValueError, match="outside"):
        tables.validate(EVAL, pd.DataFrame([row(mean=0.9)]))
    with pytest.raises(ValueError, match=r"empty key or required field \['config_hash'\]: \[\{'stage': 'sft'"):
        tables.validate(EVAL, pd.DataFrame([row(config_hash="")]))


def test_a_bad_file_is_named_with_its_rows(tmp_path):
    path = tmp_path / "eval.csv"
    pd.DataFrame([row(), row(stage="rl_math", mean=1.5, ci_high=1.6)]).to_csv(path, index=False)
    with pytest.raises(ValueError, match=rf"{path}: eval rows with mean outside .*'stage': 'rl_math'"):
        tables.read(EVAL, path)
    assert tables.read(EVAL, tmp_path / "absent.csv").columns.tolist() == list(EVAL.fields)


def test_a_failed_write_leaves_the_old_file(tmp_path):
    path = tables.write(EVAL, [row()], tmp_path / "eval.csv")
    before = path.read_bytes()
    with pytest.raises(ValueError):
        tables.write(EVAL, [row(mean=2.0)], path)
    assert path.read_bytes() == before and len(list(tmp_path.iterdir())) == 1


def test_upsert_replaces_whole_runs_and_ranks_columns():
    schema = tables.Table("t", ("run", "step", "x"), ("run", "step"), run_key=("run",),
                          rank=(("run", ("b", "a")),), types=(("step", int),))
    stored = tables.upsert(schema, tables.empty(schema), [{"run": r, "step": s, "x": 0.5} for r in "ab" for s in (1, 2)])
    out = tables.upsert(schema, stored, [{"run": "a", "step": 3, "x": 1.0}])
    assert out[["run", "step"]].values.tolist() == [["b", 1], ["b", 2], ["a", 3]]


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*/eval.csv")), ids=lambda p: p.parent.name)
def test_committed_eval_tables_follow_the_schema(path):
    assert list(tables.read(EVAL, path).columns) == list(EVAL.fields)


def test_new_rows_name_what_drew_them_and_older_rows_read_unknown(tmp_path):
    path = tmp_path / "eval.csv"
    pd.DataFrame([row(stage="base")]).to_csv(path, index=False)  # written before the provenance columns
    assert set(tables.read(EVAL, path)[list(tables.PROVENANCE)].iloc[0]) == {"unknown"}
    df = tables.upsert_file(EVAL, [row(stage="sft")], path).set_index("stage")
    assert df.loc["base", "cpu"] == "unknown" and df.loc["sft", "cpu"] == numerics.cpu_model()
    assert df.loc["sft", ["numerics", "torch", "mkl"]].tolist() == [numerics.mode(), torch.__version__,
                                                                    numerics.mkl_version()]
    assert "config_hash" not in tables.PROVENANCE and not set(tables.PROVENANCE) & set(EVAL.key)


def test_side_by_side_pairs_stages_with_paper_models():
    ours = pd.DataFrame([row(stage="sft", benchmark="tiny_aime"), row(stage="rl_code", benchmark="tiny_lcb")])
    table = side_by_side(ours, load_reported())
    sft = table[table.stage == "sft"].iloc[0]
    assert sft.paper_benchmark == "aime24" and sft.paper_pct == 75.6 and sft.ours_pct == 25.0
    assert table[table.stage == "rl_code"].iloc[0].paper_pct == 61.6
    # the held-out splits the re-run reads stand for the same paper benchmark as their ability's miniature one
    held = side_by_side(pd.DataFrame([row(stage="sft", benchmark="math_eval_t23"),
                                      row(stage="rl_code", benchmark="code_eval_t45")]), load_reported())
    assert list(held.paper_pct) == [61.6, 75.6] and list(held.paper_benchmark) == ["lcb_v5", "aime24"]


def test_every_world_benchmark_has_the_paper_analogue_of_its_ability():
    from klear_lib.evaluation.benchmarks import SPECS
    from klear_lib.results import ANALOGUE

    world = {name: spec.ability for name, spec in SPECS.items() if spec.source == "world"}
    assert {name: ANALOGUE.get(name) for name in world} == {
        name: "aime24" if ability == "math" else "lcb_v5" for name, ability in world.items()}


@pytest.mark.parametrize("field, value, why", [("mean", "abc", "not a number"), ("n_problems", 4.5,
                                                                                  "not a whole number"),
                                               ("k", "two", "not a number"), ("stderr", -0.5, "below 0"),
                                               ("seed", -1, "below 0"), ("n_samples", "", "not a number")])
def test_values_are_typed_and_range_checked_on_write_naming_row_and_field(tmp_path, field, value, why):
    """Before: a non-numeric mean was a bare pandas TypeError, n_problems 4.5 was written as 4, k "two" a bare
    ValueError on upsert."""
    path = tmp_path / "eval.csv"
    rows = [row(stage="base"), row(stage="sft", **{field: value})]
    with pytest.raises(ValueError, match=rf"{path}: eval row 2 .*'stage': 'sft'.*, field '{field}': .* is {why}"):
        tables.write(EVAL, rows, path)
    with pytest.raises(ValueError, match=rf"eval row 1 .*field '{field}': .* is {why}"):
        tables.upsert(EVAL, tables.empty(EVAL), rows[1:])
    assert not path.exists()


def test_values_are_typed_and_range_checked_on_read_naming_file_row_and_field(tmp_path):
    path = tables.write(EVAL, [row(stage="base"), row(stage="sft")], tmp_path / "eval.csv")
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace(",0.250000,", ",abc,", 1)
    path.write_text("".join(lines))
    with pytest.raises(ValueError, match=rf"{path}: eval row 2 .*'stage': 'sft'.*, field 'mean': 'abc' is not a num"):
        tables.read(EVAL, path)


def test_a_run_with_rows_of_another_config_hash_is_refused(tmp_path):
    """Rows of one run written by two configs (a resumed run over another's) name the file, the run and both."""
    schema = tables.Table("curve", ("run", "step", "x", "config_hash"), ("run", "step"), run_key=("run",),
                          types=(("step", int), ("config_hash", str)))
    rows = [{"run": "a", "step": s, "x": 0.5, "config_hash": h} for s, h in ((1, "yyy"), (2, "xxx"))]
    path = tmp_path / "curve.csv"
    with pytest.raises(ValueError, match=rf"{path}: curve run {{'run': 'a'}} has rows of config_hash \['xxx', 'yyy'\]"):
        tables.write(schema, rows, path)
    stored = tables.upsert(schema, tables.empty(schema), [dict(r, config_hash="yyy") for r in rows])
    assert tables.upsert(schema, stored, [dict(r, config_hash="xxx") for r in rows])["config_hash"].tolist() == \
        ["xxx", "xxx"]  # a rerun of the run replaces its rows whole


def test_every_table_of_drawn_rows_names_what_drew_them():
    """A table whose rows a run draws (they carry the run's config_hash) names the machine and numerics mode on
    every row (docs/stack.md §11); the per-problem table was once left out."""
    import importlib
    import pkgutil

    import klear_lib

    found = {}
    for info in pkgutil.walk_packages(klear_lib.__path__, "klear_lib."):
        if info.name.startswith(("klear_lib.integrations", "klear_lib.data.full", "klear_lib.evaluation.full")):
            continue  # optional engines and the full-scale runners hold no result table
        module = importlib.import_module(info.name)
        found |= {t.name: t for t in vars(module).values() if isinstance(t, tables.Table)}
    # shares measured on a run's samples, keyed by the run: the run's own row (ablations_sft.csv) names what drew it
    described = {"SFT styles"}
    drawn = {name for name, t in found.items() if "config_hash" in t.columns} - described
    assert {"eval", "problems", "ablation", "stability"} <= drawn and described <= set(found)
    assert [name for name in sorted(drawn) if not found[name].provenance] == []
