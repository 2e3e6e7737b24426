"""Data cards: HF front matter, Gebru et al.'s seven sections, provenance; counts generated from the data."""
from __future__ import annotations

import re

import pytest

from klear_lib.configs import get_config
from klear_lib.data import build_world
from klear_lib.data.cards import source_card, world_card, write_source_cards
from klear_lib.data.sources import SOURCES, load_source
from klear_lib.paths import DATA_CARDS

SECTIONS = ("Motivation", "Composition", "Collection process", "Preprocessing, cleaning and labelling", "Uses",
            "Distribution", "Maintenance", "Provenance")


def _check_structure(text: str):
    assert text.startswith("---\npretty_name: ") and "\nlicense: " in text and "\n---\n" in text[4:]
    heads = re.findall(r"^## (.+)$", text, flags=re.M)
    assert tuple(heads) == SECTIONS, heads


@pytest.fixture(scope="module")
def world():
    return build_world(get_config("data", "ci"))


def test_world_card_counts_come_from_the_rows(world):
    rows = world.splits["math_rl"]
    text = world_card("math_rl", rows, world.funnel, "ci", world.config_hash)
    _check_structure(text)
    assert f"| math_rl | {len(rows)} | {len(rows)} |" in text and "math_majority_verify" in text
    fewer = world_card("math_rl", rows[:7], world.funnel, "ci", world.config_hash)
    assert "| math_rl | 7 | 7 |" in fewer and fewer != text  # counts follow the data, not a template


def test_source_cards(tmp_path):
    rows, funnel = load_source("aime2024")
    text = source_card(SOURCES["aime2024"], rows, funnel)
    _check_structure(text)
    assert "30 rows" in text and "sha256 `dc3c6f08943fd7ee178c673894c20144a8b28dcc4c28ae115bfd6cbd13859971`" in text
    hub = source_card(SOURCES["klear_math_sub30k"], None, None)
    _check_structure(hub)
    assert "UNVERIFIED" in hub and "Not loaded on this machine" in hub
    paths = write_source_cards(tmp_path, ["aime2024", "lcb_v6"])
    assert [p.name for p in paths] == ["source_aime2024.md", "source_lcb_v6.md"]


@pytest.mark.parametrize("name", ["aime2024", "aime2025", "lcb_v5", "klear_code_sub15k"])
def test_committed_cards_match_regeneration(tmp_path, name):
    committed = DATA_CARDS / f"source_{name}.md"
    if not committed.exists():
        pytest.skip("cards not generated yet (run notebook 01 at tiny)")
    (fresh,) = write_source_cards(tmp_path, [name])
    assert fresh.read_text() == committed.read_text(), f"{committed} is stale: re-run notebook 01 at tiny"
