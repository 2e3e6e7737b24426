"""README sections are generated between markers; the rest of the README is untouched."""
from __future__ import annotations

import pandas as pd

from klear_lib.report import markdown_table, replace_section


def test_replace_section_only_touches_the_markers():
    text = "intro\n<!-- results:start -->\nold\n<!-- results:end -->\noutro\n"
    out = replace_section(text, "results", "new")
    assert out == "intro\n<!-- results:start -->\nnew\n<!-- results:end -->\noutro\n"
    assert replace_section(out, "results", "new") == out


def test_replace_section_appends_missing_markers():
    out = replace_section("intro\n", "claims", "| a |")
    assert out.endswith("<!-- claims:start -->\n| a |\n<!-- claims:end -->\n") and out.startswith("intro\n")


def test_markdown_table_shows_missing_values():
    md = markdown_table(pd.DataFrame({"a": [1.5, None], "b": ["x", "y"]}))
    assert md.splitlines() == ["| a | b |", "|---|---|", "| 1.5 | x |", "| — | y |"]
