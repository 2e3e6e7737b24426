"""A static HTML report of a preset's study: its executed notebooks, its figures and its claims table, offline.

The stored notebooks ``results/<preset>/notebooks/NN_*.ipynb`` are converted as they are (never executed) with
nbconvert's ``lab`` template, its CSS inlined and its script tags (require.js, MathJax, Mermaid, widgets: CDN
URLs) left out, so every page opens from a zipped folder without a network; math in markdown then shows as typed.
The only ``http`` left in the pages is text: comments in JupyterLab's CSS and URLs printed in outputs (nothing is
fetched). Figures are copied beside the pages and linked relatively.

>>> from klear_lib import site
>>> index = site.build("tiny")   # build/report/index.html, notebooks/*.html, figures/*.png
"""
from __future__ import annotations

import argparse
import html
import re
import shutil
from pathlib import Path
from urllib.parse import quote

import jinja2
import nbformat
import pandas as pd
from nbconvert import HTMLExporter
from nbconvert.filters import markdown2html

from klear_lib import tables
from klear_lib.paths import FIGURES, REPO, RESULTS

REPORT = REPO / "build" / "report"
KEY_FIGURES = ("claims_forest",)  # figure stems after "<preset>_", shown beside the claims table
FAMILIES = "One claim family per figure"  # the per-experiment forest plots, shown after the claims table
# Topic of a figure by its stem after "<preset>_" (the longest matching prefix wins), in the notebooks' order.
TOPICS = ((FAMILIES, ("claims_forest_",)), ("SFT", ("sft_",)), ("RL", ("rl_",)), ("SFT data ablations", ("ablation_",)),
          ("RL ablations", ("rl_fig", "rl_table")), ("Stability map", ("stability_",)))
OTHER = "Other figures"
# Within a topic, an experiment's panels in reading order: the result before the curves behind it; RL in run order.
PANEL_ORDER = {"heldout": 0, "math": 0, "curve": 1, "dynamics": 1, "code": 1, "clipping": 2, "eval": 2}

# The lab template without its <script> tags, our CSS after its own, and a way back to the index on every page.
PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_css -%}<style>{{ resources.klear_css }}</style>{%- endblock html_head_css -%}
{%- block body_header -%}{{ super() }}{{ resources.klear_nav }}{%- endblock body_header -%}
"""
PAGE_CSS = """nav.klear { font: 14px sans-serif; padding: 8px 16px; border-bottom: 1px solid #ddd; }
.jp-Notebook { max-width: 1200px; margin: 0 auto; }
.jp-OutputArea-output img { max-width: 100%; height: auto; }
/* printed tables keep their columns: wide ones scroll sideways instead of wrapping mid-row */
.jp-OutputArea-output[data-mime-type="text/plain"] { overflow-x: auto; }
.jp-OutputArea-output[data-mime-type="text/plain"] pre { white-space: pre; word-break: normal; overflow-wrap: normal; }
/* HTML outputs (a trainer's per-step log table) scroll inside a box (a block: a table cell takes no max-height) */
.jp-OutputArea-output[data-mime-type="text/html"] { display: block; max-height: 24em; overflow: auto; }
.celltag_parameters::before, .celltag_injected-parameters::before { display: block; margin: 0 0 2px 76px;
  font: italic 12px sans-serif; color: #666; }
.celltag_parameters::before { content: "The notebook's default parameters"; }
.celltag_injected-parameters::before { content: "This run's parameters (papermill), which override the defaults"; }
"""
INDEX_CSS = """body { font: 15px/1.45 system-ui, sans-serif; max-width: 1200px; margin: 24px auto; padding: 0 16px;
  color: #222; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 36px; }
code { font-size: 90%; background: #f3f3f3; padding: 0 3px; }
ol.notebooks li { margin-bottom: 8px; } ol.notebooks p { margin: 2px 0; color: #444; }
/* figures at their own size (saved at the size they are meant to be read), side by side when they fit */
.figs { display: flex; flex-wrap: wrap; gap: 12px 20px; align-items: flex-end; }
figure { margin: 0 0 8px; max-width: 100%; } figure img { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 12px; color: #666; }
.scroll { overflow-x: auto; }
table.claims { border-collapse: collapse; font-size: 13px; margin-top: 8px; }
table.claims th, table.claims td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
table.claims th { background: #f5f5f5; position: sticky; top: 0; }
table.claims td { white-space: nowrap; }
table.claims td:nth-child(n+4):nth-child(-n+9) { white-space: nowrap; text-align: right;
  font-variant-numeric: tabular-nums; }
/* the verdict in the forest plots' colours */
tr.v-replicated td:last-child { background: #d5ecd5; } tr.v-opposite td:last-child { background: #f5cfcf; }
tr.v-no-effect-of-the-paper-s-size td:last-child { background: #d9e6f4; }
tr.v-underpowered td:last-child { background: #eee; } tr.v-not-run td { color: #888; font-style: italic; }"""


def title_and_summary(nb: nbformat.NotebookNode, fallback: str) -> tuple[str, str]:
    """The first markdown H1 of ``nb`` and the paragraph after it (its one-line subtitle, emphasis stripped)."""
    for cell in (c for c in nb.cells if c.cell_type == "markdown"):
        match = re.search(r"^# ([^\n]+)\n?(.*?)(?:\n\s*\n|\Z)", cell.source, re.M | re.S)
        if match:
            return match.group(1).strip(), " ".join(match.group(2).split()).strip("*_ ")
    return fallback, ""


def reading_order(stem: str) -> tuple[str, int, str]:
    """A figure stem's sort key: its experiment (the stem less its last word), then ``PANEL_ORDER``."""
    head, _, last = stem.rpartition("_")
    return head, PANEL_ORDER.get(last, len(PANEL_ORDER)), last


def figure_html(name: str) -> str:
    """A figure of the bundle's ``figures/<name>``, captioned by its name and linked to itself at full size."""
    src = "figures/" + quote(name)
    return (f'<figure><a href="{src}"><img src="{src}" alt="{html.escape(name)}" loading="lazy"></a>'
            f"<figcaption>{html.escape(name)}</figcaption></figure>")


def figures_html(preset: str, copied: list[str]) -> dict[str, str]:
    """The index's figures: ``key`` (``KEY_FIGURES``, in that order), ``families`` (``FAMILIES``) and ``topics``
    (the rest under a heading per topic of ``TOPICS``)."""
    stems = {name[len(preset) + 1:-4]: name for name in copied}
    groups: dict[str, list[str]] = {"key": [figure_html(stems[s]) for s in KEY_FIGURES if s in stems]}
    for stem, name in sorted(stems.items(), key=lambda item: reading_order(item[0])):
        if stem not in KEY_FIGURES:  # under its topic: the longest matching prefix of TOPICS
            topics = [(len(p), topic) for topic, prefixes in TOPICS for p in prefixes if stem.startswith(p)]
            groups.setdefault(max(topics)[1] if topics else OTHER, []).append(figure_html(name))

    def block(name, heading=True):
        title = f'<h3 id="{anchor(name)}">{html.escape(name)}</h3>' if heading else ""
        return f'{title}<div class="figs">{"".join(groups[name])}</div>' if groups.get(name) else ""
    names = [t for t, _ in TOPICS[1:] if t in groups] + ([OTHER] if OTHER in groups else [])
    toc = " · ".join(f'<a href="#{anchor(t)}">{html.escape(t)}</a>' for t in names)
    return {"key": block("key", heading=False), "families": block(FAMILIES),
            "topics": (f"<p>{toc}</p>" if toc else "") + "".join(block(t) for t in names)}


def anchor(name: str) -> str:
    """An id for a heading: ``"RL ablations"`` -> ``"rl-ablations"``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def table_html(df: pd.DataFrame, verdicts) -> str:
    """``df`` as an HTML table (cells escaped, missing ones as an em dash), row ``i`` classed by ``verdicts[i]``."""
    cells = df.astype(object).where(df.notna(), "—").astype(str).values.tolist()
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = "".join(f'<tr class="{k}">' + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
                   for k, row in zip(("v-" + re.sub(r"\W+", "-", v) for v in verdicts), cells))
    return (f'<div class="scroll"><table class="claims"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
            "</table></div>")


def claims_html(preset: str, results: Path = RESULTS) -> str:
    """``results/<preset>/claims.csv`` as the README's claims table (``claims.readme_table``) in HTML; where the
    training stack is not installed (``make report``'s own light environment), the generated copy of that table on
    the claims page (``readme_claims_html``)."""
    path = results / preset / "claims.csv"
    if not path.exists():
        return f"<p>No <code>results/{html.escape(preset)}/claims.csv</code> yet: run <code>make ablations</code>.</p>"
    try:  # lazy: the claims code imports the ablation families and with them the training stack
        from klear_lib.ablations import claims as C  # lazy: see above
    except ImportError:
        return readme_claims_html()
    claims = tables.read(C.CLAIMS, path)
    counts = ", ".join(f"{n} {v}" for v, n in claims["verdict"].value_counts().sort_index().items())
    note = (f"<p>From <code>results/{html.escape(preset)}/claims.csv</code>: Δ = claimed better minus claimed worse, "
            "in points; 95% interval over seeds, paired by seed; MDE = the difference those seeds detect with 80% "
            f"power; seeds for paper Δ = seeds per arm the claimed size would need. {html.escape(counts)}.</p>")
    return note + table_html(C.readme_table(claims), claims["verdict"])


def readme_claims_html(readme: Path = REPO / "docs" / "claims.md") -> str:
    """The claims page's generated section (``make readme`` writes it from claims.csv with the same
    ``claims.readme_table``; the README links the page): its note and its table, rows classed by verdict as
    ``claims_html`` does."""
    text = readme.read_text(encoding="utf-8")
    if "<!-- claims:start -->" not in text:
        return "<p>No claims table on docs/claims.md yet: run <code>make readme</code>.</p>"
    body = text.split("<!-- claims:start -->", 1)[1].split("<!-- claims:end -->", 1)[0]
    rows = [line.strip().strip("|").split(" | ") for line in body.splitlines() if line.startswith("| ")]
    note = body.strip().split("\n\n", 1)[0]
    if len(rows) < 2:
        return markdown2html(note)
    table = pd.DataFrame([[c.strip() for c in r] for r in rows[1:]], columns=[c.strip() for c in rows[0]])
    return (markdown2html(note + " (This copy is docs/claims.md's: the report was built without the training stack.)")
            + table_html(table, table.get("verdict", [""] * len(table))))


def index_html(preset: str, items: list[str], claims: str, figures: dict[str, str]) -> str:
    """The index page: notebooks, the paper's claims (key figures and table), the other figures by topic."""
    body = (f"<h1>Klear-Reasoner in miniature: the <code>{html.escape(preset)}</code> study</h1>"
            f"<p>The executed notebooks of <code>results/{html.escape(preset)}/notebooks/</code> as stored (not "
            "re-run), the study's figures and its claims table. Built by <code>make report</code>.</p>"
            '<p><a href="#notebooks">Notebooks</a> · <a href="#claims">The paper\'s claims</a> · '
            '<a href="#figures">Figures</a></p>'
            f'<h2 id="notebooks">Notebooks</h2><ol class="notebooks">{"".join(items)}</ol>'
            f'<h2 id="claims">The paper\'s claims in miniature</h2>{figures["key"]}{claims}{figures["families"]}'
            f'<h2 id="figures">Figures</h2>{figures["topics"] or "<p>No figures yet.</p>"}')
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Klear-Reasoner: {preset} report'
            f"</title><style>{INDEX_CSS}</style></head><body>{body}</body></html>\n")


def build(preset: str = "tiny", out: Path | str = REPORT, results: Path = RESULTS, figures: Path = FIGURES) -> Path:
    """The report of ``preset`` in ``out`` (emptied first: a previous report there is removed, any other non-empty
    folder refused): ``index.html``, ``notebooks/NN_*.html``, ``figures/*.png``; returns the index's path."""
    found = sorted((results / preset / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not found:
        raise FileNotFoundError(f"no executed notebooks (NN_*.ipynb) in {results / preset / 'notebooks'}: run `make "
                                f"reproduce PRESET={preset}` (or `make ablations`) first")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not (out / "index.html").exists():
            raise FileExistsError(f"{out} is not empty and holds no report (index.html): choose another --out")
        shutil.rmtree(out)
    (out / "notebooks").mkdir(parents=True)
    (out / "figures").mkdir()
    # nbconvert's lab exporter with PAGE_TEMPLATE: inlined CSS, no scripts, no anchor links
    exp = HTMLExporter(template_name="lab", template_file="klear_offline.html.j2", exclude_anchor_links=True,
                       extra_loaders=[jinja2.DictLoader({"klear_offline.html.j2": PAGE_TEMPLATE})])
    nav = '<nav class="klear"><a href="../index.html">&larr; Report index</a></nav>'
    items = []
    for path in found:  # each notebook as a page, its outputs as stored (it is not run)
        nb = nbformat.read(path, as_version=4)
        title, summary = title_and_summary(nb, path.stem)
        nb.metadata["title"] = title
        for cell in nb.cells:  # nbval's markers steer the regression check, not the reader
            if cell.cell_type == "code":
                cell.source = "\n".join(line for line in cell.source.splitlines() if not line.startswith("# NBVAL_"))
        body, _ = exp.from_notebook_node(nb, resources={"klear_css": PAGE_CSS, "klear_nav": nav})
        (out / "notebooks" / f"{path.stem}.html").write_text(body, encoding="utf-8")
        items.append(f'<li><a href="notebooks/{quote(path.stem + ".html")}">{html.escape(title)}</a>'
                     f"{markdown2html(summary) if summary else ''}</li>")
    # the study's figures <preset>_*.png: in figures/ or, for a smoke preset, figures/<preset>/
    pngs = {p.name: p for p in [*figures.glob(f"{preset}_*.png"), *(figures / preset).glob(f"{preset}_*.png")]}
    copied = [shutil.copy2(p, out / "figures" / p.name) and p.name for p in sorted(pngs.values())]
    index = out / "index.html"
    index.write_text(index_html(preset, items, claims_html(preset, results), figures_html(preset, copied)),
                     encoding="utf-8")
    return index


def main(argv: list[str] | None = None) -> Path:
    """``python -m klear_lib.site --preset tiny --out build/report``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--out", type=Path, default=REPORT, help="report folder (default: build/report)")
    args = parser.parse_args(argv)
    try:
        index = build(args.preset, args.out)
    except (FileNotFoundError, FileExistsError) as err:
        raise SystemExit(f"make report: {err}") from None
    print(f"report: {index}")
    return index


if __name__ == "__main__":
    main()
