"""README sections generated from results files (never typed): our numbers beside the paper's.

Each section sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` markers in README.md; only the text
between them is replaced, so the rest of the README stays hand-written.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from klear_lib.paths import REPO, RESULTS


def replace_section(text: str, name: str, body: str) -> str:
    """``text`` with the part between the ``name`` markers replaced by ``body`` (markers appended if absent)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start not in text or end not in text:
        text = text.rstrip("\n") + f"\n\n{start}\n{end}\n"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body.strip()}\n{end}{tail}"


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub markdown table of ``df`` (values as printed by pandas, NaN as an em dash)."""
    cells = df.astype(object).where(df.notna(), "—").astype(str)
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in cells.values.tolist()]
    return "\n".join(lines)


def results_section(preset: str = "tiny") -> str:
    """Our avg@k per stage (with 95% CI) beside the paper's Table 1 value for the analogous benchmark."""
    from klear_lib.results import eval_csv, load_reported, read_eval, side_by_side

    path = eval_csv(preset)
    if not path.exists():
        return f"_No `results/{preset}/eval.csv` yet: run `make reproduce`._"
    table = side_by_side(read_eval(path), load_reported())
    table["ours_pct"] = table["ours_pct"].round(1)
    note = (f"Ours: `results/{preset}/eval.csv` (miniature benchmarks, avg@k in %, bootstrap 95% CI over "
            "problems). Paper: `results/reported.csv` (Table 1, the analogous real benchmark and model).")
    return note + "\n\n" + markdown_table(table)


def claims_section(preset: str = "tiny") -> str:
    """The paper's claims (Tables 2-6, Figures 2-5) with its difference, ours and the verdict, from claims.csv."""
    from klear_lib.ablations.claims import claims_csv, read_claims, readme_table

    path = claims_csv(preset)
    if not path.exists():
        return f"_No `results/{preset}/claims.csv` yet: run `make ablations`._"
    claims = read_claims(path)
    counts = claims["verdict"].value_counts().sort_index()
    note = (f"Generated from `results/{preset}/claims.csv` (paper numbers from `results/reported.csv`). Δ = claimed "
            "better minus claimed worse, in points (avg@k); 95% Welch interval over seeds; "
            + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".")
    return note + "\n\n" + markdown_table(readme_table(claims))


SECTIONS = {"results": results_section, "claims": claims_section}


def write_readme(preset: str = "tiny", readme: Path = REPO / "README.md", sections=tuple(SECTIONS)) -> Path:
    """Regenerate the README's generated sections (``SECTIONS``) from ``results/``."""
    text = readme.read_text()
    for name in sections:
        text = replace_section(text, name, SECTIONS[name](preset))
    readme.write_text(text)
    return readme
