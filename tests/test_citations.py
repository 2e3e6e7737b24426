"""Every citation in the repository lands on something in the repository: a cited ``*.md`` file exists, and a
``docs/<name>.md §N`` (or ``§N Table K``) citation names a section that file has. The paper notes, the design
and the stack notes live in ``docs/``; nothing may point at notes that exist only beside a developer's clone."""
from __future__ import annotations

import re
from itertools import takewhile
from pathlib import Path

import pytest

from klear_lib.paths import REPO

TEXT = {".py", ".md", ".ipynb", ".toml", ".yml", ".yaml", ".sh", ".csv", ".cfg", ".txt"}
SKIP = {".git", ".venv", ".venv-verl", ".artifacts", "__pycache__", ".ipynb_checkpoints", "build", "dist"}
MD = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.md)\b")
SECTION = re.compile(r"(docs/(?:paper|design|stack)\.md) §(\d+(?:\.\d+)?)(?:[-–](\d+(?:\.\d+)?))?"
                     r"(?: (Table \d|Fig(?:s?\.|ures?)))?")
# ``*.md`` names that are not files of this repository: other projects' files named in prose and docstrings
ELSEWHERE = {"SOURCE.md"}


def text_files() -> list[Path]:
    out = []
    for path in REPO.rglob("*"):
        if SKIP & set(path.relative_to(REPO).parts) or not path.is_file():
            continue
        if path.suffix in TEXT or path.name in ("Makefile", "run"):
            out.append(path)
    return sorted(out)


def has_section(doc: str, number: str, sub: str | None) -> bool:
    """A heading starting with ``number`` ("2.4" matches "### 2.4 RL ..."), and for ``§3 Table 4`` that heading
    or one inside its section naming "Table 4"."""
    lines = [ln for ln in (REPO / doc).read_text().splitlines() if ln.startswith("#")]
    level = lambda ln: len(ln) - len(ln.lstrip("#"))  # noqa: E731
    head = re.compile(rf"{re.escape(number)}[.\s]")
    idx = next((i for i, ln in enumerate(lines) if head.match(ln.lstrip("#").strip() + " ")), None)
    if idx is None:
        return False
    if not sub:
        return True
    inside = [lines[idx]] + list(takewhile(lambda ln: level(ln) > level(lines[idx]), lines[idx + 1:]))
    word = "Fig" if sub.startswith("Fig") else sub
    return any(word in ln for ln in inside)


@pytest.fixture(scope="module")
def files():
    return text_files()


def test_no_citation_of_notes_outside_the_repository(files):
    stale = re.compile(r"\b(?:PAPER|STACK|DESIGN|STYLE)\.md\b|\.\./shared|KLEAR_SHARED")
    hits = [f"{p.relative_to(REPO)}:{i}" for p in files if p.name != "test_citations.py"
            for i, ln in enumerate(p.read_text(errors="ignore").splitlines(), 1) if stale.search(ln)]
    assert not hits, hits


def test_every_cited_markdown_file_exists(files):
    missing = []
    for path in files:
        for i, line in enumerate(path.read_text(errors="ignore").splitlines(), 1):
            for name in MD.findall(line):
                here = [d / name for d in (path.parent, REPO, REPO / "docs", REPO / "results", REPO / "data_cards")]
                if Path(name).name not in ELSEWHERE and not any(p.is_file() for p in here):
                    missing.append(f"{path.relative_to(REPO)}:{i}: {name}")
    assert not missing, missing


def test_every_section_citation_names_a_section(files):
    bad, seen = [], 0
    for path in files:
        for i, line in enumerate(path.read_text(errors="ignore").splitlines(), 1):
            for doc, first, last, sub in SECTION.findall(line):
                seen += 1
                for number in filter(None, (first, last)):
                    if not has_section(doc, number, sub or None):
                        bad.append(f"{path.relative_to(REPO)}:{i}: {doc} §{number} {sub}".rstrip())
    assert seen > 100 and not bad, bad


def test_the_checker_catches_a_bad_citation():
    assert has_section("docs/paper.md", "2.4", None) and has_section("docs/paper.md", "3", "Table 4")
    assert not has_section("docs/paper.md", "9", None) and not has_section("docs/paper.md", "2.9", None)
    assert not has_section("docs/stack.md", "3", "Table 4")
    assert SECTION.findall("see docs/paper.md §2.2-2.3 and docs/stack.md §8") == [
        ("docs/paper.md", "2.2", "2.3", ""), ("docs/stack.md", "8", "", "")]
