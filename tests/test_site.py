"""The static report (``klear_lib.site``): every page and figure linked, offline, from stored notebooks only."""
from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from klear_lib import site, tables
from klear_lib.ablations import claims as C

PNG = base64.b64decode(  # a 1 x 1 pixel
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
FIGURES = ("tiny_claims_forest.png", "tiny_claims_forest_fig2.png", "tiny_sft_curve.png",
           "tiny_rl_fig2_dynamics.png", "tiny_rl_fig2_heldout.png", "tiny_rl_math.png", "tiny_stability_mean.png")


class Links(HTMLParser):
    """Every ``href`` and ``src`` of a page, and whether it has a script tag."""

    def __init__(self):
        super().__init__()
        self.links, self.scripts = [], 0

    def handle_starttag(self, tag, attrs):
        self.scripts += tag == "script"
        self.links += [v for k, v in attrs if k in ("href", "src") and v]


def links(path):
    parser = Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def notebook(title, subtitle, text):
    """A hand-made executed notebook: a title cell, a code cell with a printed line and an image."""
    code = new_code_cell("print('hi')", execution_count=1, outputs=[
        new_output("stream", name="stdout", text=text),
        new_output("display_data", data={"image/png": base64.b64encode(PNG).decode(), "text/plain": "<Figure>"})])
    return new_notebook(cells=[new_markdown_cell(f"# {title}\n*{subtitle}*\n\n- **Inputs:** none"), code])


def claims_rows():
    """Two claims in the schema of ``claims.csv``: one run (paired, 3 seeds), one not run."""
    run = {c: None for c in C.COLUMNS} | {
        "claim_id": "t2:a>b@tiny_aime", "family": "sft", "table": "Table 2", "experiment": "table2",
        "benchmark": "tiny_aime", "better": "easy/only_correct", "worse": "easy/mixed", "source": "paper",
        "paper_benchmarks": "aime24;aime25", "paper_statistic": "table", "paper_diff_pts": 2.7,
        "paper_diff_low_pts": 0.62, "paper_diff_high_pts": 4.78, "paper_base_pct": 42.6, "ours_base_pct": 1.1,
        "carried_low_pts": 0.03, "carried_high_pts": 0.22, "ours_diff_pts": 0.42, "ci_low_pts": -1.58,
        "ci_high_pts": 2.41, "adj_ci_low_pts": -3.69, "adj_ci_high_pts": 4.53, "test": "paired", "df": 2,
        "n_seeds": 3, "p_holm": 1.0, "power_at_claim": 0.013, "verdict": "undecided",
        "claim": "easy prompts: only-correct"}
    missing = run | {"claim_id": "t6:x>y@tiny_aime", "better": "a0.1", "worse": "a0", "table": "Table 6",
                     "experiment": "table6", "verdict": C.NOT_RUN, "n_seeds": 0} | {
        c: None for c in ("ours_diff_pts", "ci_low_pts", "ci_high_pts", "adj_ci_low_pts", "adj_ci_high_pts", "test",
                          "df", "p_holm", "power_at_claim", "ours_base_pct", "carried_low_pts", "carried_high_pts")}
    return C.CLAIMS, [run, missing]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A results folder with two notebooks, a claims table and figures of ``tiny`` (and one of ``ci``)."""
    root = tmp_path_factory.mktemp("study")
    nbs = root / "results" / "tiny" / "notebooks"
    nbs.mkdir(parents=True)
    nbformat.write(notebook("01 · Make data", "Rows from `a seed`.", "made 3 rows\n"), nbs / "01_make_data.ipynb")
    nbformat.write(notebook("02 · Train", "A tiny run.", "loss 0.5\n"), nbs / "02_train.ipynb")
    (nbs / "scratch.ipynb").write_text("{}")  # not NN_*: left out
    schema, rows = claims_rows()
    tables.write(schema, rows, root / "results" / "tiny" / "claims.csv")
    figures = root / "results" / "figures"
    (figures / "ci").mkdir(parents=True)
    for name in FIGURES:
        (figures / name).write_bytes(PNG)
    (figures / "ci" / "ci_sft_curve.png").write_bytes(PNG)
    (figures / "ci_rl_math.png").write_bytes(PNG)
    index = site.build("tiny", root / "report", results=root / "results", figures=figures)
    return root, index


def test_index_links_every_page_and_figure(study):
    root, index = study
    out = index.parent
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html") if p != index)
    figures = sorted(p.relative_to(out).as_posix() for p in (out / "figures").iterdir())
    assert pages == ["notebooks/01_make_data.html", "notebooks/02_train.html"]
    assert figures == sorted(f"figures/{name}" for name in FIGURES)  # no ci figure
    linked = set(links(index).links)
    assert set(pages) | set(figures) <= linked
    assert all((out / link).exists() for link in linked if not link.startswith("#"))
    for page in pages:
        assert "../index.html" in links(out / page).links


def test_index_shows_titles_summaries_and_groups(study):
    text = study[1].read_text(encoding="utf-8")
    assert "01 · Make data" in text and "Rows from <code>a seed</code>." in text and "02 · Train" in text
    order = ["tiny_claims_forest.png", "</table>", "tiny_claims_forest_fig2.png",
             'id="figures"', ">SFT</h3>", "tiny_sft_curve", ">RL</h3>", "tiny_rl_math", ">RL ablations</h3>",
             "tiny_rl_fig2_heldout", "tiny_rl_fig2_dynamics", ">Stability map</h3>", "tiny_stability_mean"]
    assert [text.index(s) for s in order] == sorted(text.index(s) for s in order)
    assert '<a href="#rl-ablations">RL ablations</a>' in text


def test_claims_table_has_the_reviewers_columns(study):
    text = study[1].read_text(encoding="utf-8")
    table = text[text.index('<table'):text.index("</table>")]
    for column in ("claim (better &gt; worse)", "paper Δ pts (reading)", "base rate paper → ours %",
                   "paper Δ at our base pts", "ours Δ pts", "family-wise CI", "seeds", "p (Holm)", "power at claim",
                   "seeds for 80%", "verdict"):
        assert f"<th>{column}</th>" in table
    assert "+0.6 to +4.8 (table)" in table and "[-3.7, +4.5]" in table and "42.6 → 1.1" in table
    assert '<tr class="v-undecided">' in table and '<tr class="v-not-run">' in table


def test_pages_are_offline_and_relative(study):
    root, index = study
    for page in index.parent.rglob("*.html"):
        text, parsed = page.read_text(encoding="utf-8"), links(page)
        assert parsed.scripts == 0, page
        assert not [u for u in parsed.links if re.match(r"(https?:|file:|/)", u)], page
        assert not re.search(r"cdnjs|unpkg|jsdelivr|@import|url\(https?:", text), page
        assert str(root) not in text and "/work/" not in text, page
    assert "made 3 rows" in (index.parent / "notebooks" / "01_make_data.html").read_text(encoding="utf-8")


def test_a_preset_without_notebooks_names_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "results" / "ci" / "notebooks"))):
        site.build("ci", tmp_path / "report", results=tmp_path / "results", figures=tmp_path)
    (tmp_path / "results" / "ci" / "notebooks").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no executed notebooks"):
        site.build("ci", tmp_path / "report", results=tmp_path / "results", figures=tmp_path)


def test_a_rebuild_replaces_the_report_but_no_other_folder(study, tmp_path):
    root, _ = study
    stale = tmp_path / "report"
    (stale / "notebooks").mkdir(parents=True)
    (stale / "index.html").write_text("old")
    (stale / "notebooks" / "99_gone.html").write_text("old")
    site.build("tiny", stale, results=root / "results", figures=root / "results" / "figures")
    assert not (stale / "notebooks" / "99_gone.html").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="holds no report"):
        site.build("tiny", tmp_path / "mine", results=root / "results", figures=root / "results" / "figures")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"


@pytest.mark.slow
def test_the_report_builds_without_the_training_stack(tmp_path):
    """``make report``'s own environment (the kit without dependencies, pandas, nbconvert), emulated by
    ``klear_lib.light``: the report of the stored tiny study builds, torch and TRL never load, the claims table
    comes from the generated copy on docs/claims.md."""
    import subprocess

    from klear_lib import light
    from klear_lib.paths import REPO

    site = light.light_site(tmp_path / "site", roots=("pandas", "nbconvert", "packaging"))
    assert not list(site.glob("torch")) and not list(site.glob("trl"))
    code = (f"import sys\nfrom klear_lib import site\nindex = site.build('tiny', {str(tmp_path / 'report')!r})\n"
            "text = index.read_text()\n"
            "print('torch' in sys.modules, 'trl' in sys.modules, 'class=\"claims\"' in text,\n"
            "      \"docs/claims.md's\" in text)\n")
    argv, env = light.command(site, code)
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["False", "False", "True", "True"], run.stdout
