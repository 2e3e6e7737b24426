"""Data cards: HF front matter, Gebru et al.'s seven sections, provenance; counts generated from the data."""
from __future__ import annotations

import re

import pytest

from klear_lib.configs import get_config, recipe
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
    text = world_card("math_rl", rows, world.funnel, recipe("ci"), world.config_hash)
    _check_structure(text)
    assert f"| math_rl | {len(rows)} | {len(rows)} |" in text and "math_majority_verify" in text
    fewer = world_card("math_rl", rows[:7], world.funnel, recipe("ci"), world.config_hash)
    assert "| math_rl | 7 | 7 |" in fewer and fewer != text  # counts follow the data, not a template


def test_source_cards(fake_mirror, tmp_path):
    rows, funnel = load_source("aime2024")
    text = source_card(SOURCES["aime2024"], rows, funnel)
    _check_structure(text)
    assert "Mapped from the mirror files (generated): 3 rows." in text and "- n<1K" in text
    assert "sha256 `dc3c6f08943fd7ee178c673894c20144a8b28dcc4c28ae115bfd6cbd13859971`" in text  # the registered file
    assert SOURCES["aime2024"].revision in text and "Evaluation only" in text
    paths = write_source_cards(tmp_path, ["aime2024", "lcb_v6"])
    assert [p.name for p in paths] == ["source_aime2024.md", "source_lcb_v6.md"]


def test_source_cards_tell_the_real_size_pin_and_use():
    ot = source_card(SOURCES["openthoughts3"], None, None)
    _check_structure(ot)
    assert "- 1M<n<10M" in ot and "1,200,000 rows in the hub split `train`" in ot
    assert "SFT prompts only" in ot and "not for evaluation" in ot and "Evaluation only" not in ot
    ace = source_card(SOURCES["acereason_1_1_sft"], None, None)
    assert "- unknown" in ace and "none: UNVERIFIED" in ace
    rl = source_card(SOURCES["klear_math_sub30k"], None, None)
    assert "RL training prompts" in rl and "UNVERIFIED" in rl and "- 10K<n<100K" in rl


def test_cards_of_mirror_sources_are_kept_without_the_mirror(tmp_path):
    (tmp_path / "source_aime2024.md").write_text("kept")
    paths = write_source_cards(tmp_path, ["aime2024", "openthoughts3"])
    assert [p.name for p in paths] == ["source_openthoughts3.md"]
    assert (tmp_path / "source_aime2024.md").read_text() == "kept"


@pytest.mark.parametrize("name", ["openthoughts3", "klear_code_sub15k", "lcb_v6"])
def test_committed_hub_cards_match_regeneration(tmp_path, name):
    (fresh,) = write_source_cards(tmp_path, [name])
    committed = DATA_CARDS / f"source_{name}.md"
    assert fresh.read_text() == committed.read_text(), f"{committed} is stale: re-run notebook 01 at tiny"
