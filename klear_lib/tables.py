"""Long-format results tables: one schema type (``Table``), one reader, one writer and one upsert for every CSV the
kit commits (eval.csv, the ablation and stability tables, RL curves, summaries, claims, perf.csv).

A ``Table`` is data: its columns in file order, its key, the types of its columns, the fields that must be
filled and the value checks of its rows. Writing validates, puts the columns in schema order, casts the typed
columns, sorts by the key (or keeps rows as given) and prints floats at the table's fixed precision, with no
timestamps, so a rerun gives a byte-identical file; the file is replaced atomically, so a killed run never leaves
half a table. A table with ``provenance`` also names, on every row, what drew it (``PROVENANCE``: the CPU model,
the numerics mode, torch's and MKL's versions): a row written without them is stamped with this process's, a row
derived from others names theirs (``drawn_by``), and a row read from a file written before the columns existed reads
``unknown``. Reading validates too: a hand-edited or
stale file fails with its path and the offending rows, and a file cut short (empty, or its last line without the
newline every write ends with) fails before it is parsed, so an upsert never rewrites a truncated table as if its
lost rows had never been there.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Callable, Iterable, Mapping

import pandas as pd

from klear_lib import artifacts, numerics

Rows = Iterable[dict] | pd.DataFrame
Check = tuple[str, Callable[[pd.DataFrame], pd.Series]]   # (what a bad row has, its mask over the rows)
Bound = tuple[str, float | None, float | None]           # (numeric column, lowest, highest value; None: open)
# What drew a row (klear_lib.numerics.provenance), after a provenance table's own columns; never part of a key or a
# config hash, so stored rows still match the runs that would redraw them.
PROVENANCE = ("cpu", "numerics", "torch", "mkl")


@dataclass(frozen=True)
class Table:
    """The schema of one long-format table; ``run_key`` (default: the key) names what an upsert replaces whole,
    so a rerun of one run drops every old row of it, whatever else changed."""

    name: str                                       # "eval", "ablation": named in every error
    columns: tuple[str, ...]
    key: tuple[str, ...]
    types: tuple[tuple[str, type], ...] = ()        # (column, int | float | str); str: blanks kept as ""
    required: tuple[str, ...] = ()                  # filled besides the key
    checks: tuple[Check, ...] = ()
    float_format: str = "%.6f"
    run_key: tuple[str, ...] | None = None
    sort: bool = True                               # False: rows as given (summaries in definition order)
    rank: tuple[tuple[str, tuple[str, ...]], ...] = ()  # columns sorted by position in a given order
    nullable: tuple[str, ...] = ()                  # columns where a blank cell reads as NaN
    bounds: tuple[Bound, ...] = ()                  # numeric columns and their ranges (``check_values``)
    provenance: bool = False                        # rows carry PROVENANCE after ``columns``

    @property
    def fields(self) -> tuple[str, ...]:
        """The file's columns: ``columns``, then ``PROVENANCE`` when the table carries it."""
        return self.columns + (PROVENANCE if self.provenance else ())

    @property
    def runs(self) -> tuple[str, ...]:
        """The fields that name one run (what an upsert replaces)."""
        return self.run_key or self.key


MEAN_IN_CI: Check = ("mean outside [0, 1] or outside its CI", lambda df: ~df["mean"].between(0, 1)
                      | (df["ci_low"] > df["mean"] + 1e-9) | (df["ci_high"] < df["mean"] - 1e-9))


def drawn_by(rows: Rows) -> dict[str, str]:
    """What drew ``rows``, for a row derived from them (a mean over seeds, a difference, a claim): per ``PROVENANCE``
    column the distinct values, sorted and ';'-joined (a cell already joined counts each of its parts). A row derived
    from rows of two machines names both, never only the machine that computed it; a row without its cells was drawn
    here (as ``stamp`` has it)."""
    df = stamp(Table("drawn", (), (), provenance=True), rows)
    if df.empty:
        return numerics.provenance()
    return {c: ";".join(sorted({part for v in df[c].astype(str) for part in v.split(";")})) for c in PROVENANCE}


def stamp(table: Table, rows: Rows) -> pd.DataFrame:
    """``rows`` (dicts or a frame) as a DataFrame with this process's provenance in the ``PROVENANCE`` cells it lacks
    (rows drawn here)."""
    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if not table.provenance:
        return df
    cells = {c: df[c] if c in df.columns else pd.Series(pd.NA, index=df.index, dtype=object) for c in PROVENANCE}
    blank = {c: v.isna() | (v.astype(str) == "") for c, v in cells.items()}
    if all(c in df.columns for c in PROVENANCE) and not any(b.any() for b in blank.values()):
        return df
    here = numerics.provenance()
    return df.assign(**{c: cells[c].mask(blank[c], here[c]) for c in PROVENANCE})


def validate(table: Table, df: pd.DataFrame, where: str | Path = "") -> pd.DataFrame:
    """``df``, or ``ValueError`` naming ``where`` (a file) and the rows, by key, with missing columns, an empty key
    or required field, a duplicate key or a failed value check."""
    prefix = f"{where}: " if where else ""
    missing = [c for c in table.columns if c not in df.columns]  # provenance: stamped or read as unknown
    if missing:
        raise ValueError(f"{prefix}{table.name} rows miss columns {missing}")
    check_values(table, df, where)
    check_one_config(table, df, where)
    filled = list(table.key) + list(table.required)
    blank = df[filled].isna() | (df[filled].astype(str) == "")
    fields = [c for c in filled if blank[c].any()]
    for problem, bad in chain([(f"{table.name} rows with an empty key or required field {fields}", blank.any(axis=1)),
                               (f"duplicate {table.name} keys", df.duplicated(list(table.key), keep=False))],
                              ((f"{table.name} rows with {what}", check(df)) for what, check in table.checks)):
        if bad.any():  # the checks run in order, each only once the rows passed the ones before
            raise ValueError(f"{prefix}{problem}: {df.loc[bad, list(table.key)].to_dict('records')}")
    return df


def check_values(table: Table, df: pd.DataFrame, where: str | Path = "") -> None:
    """``ValueError`` naming ``where`` (a file), the row (1-based: a file's line less its header), the row's key and
    the field of the first value of a numeric column (``int`` in ``types``, or in ``bounds``) that is not a number,
    not a whole number (``int``) or out of its bounds; a blank counts only in ``nullable`` columns. Run on read and
    on write, before anything casts (4.5 would be written as 4, "two" raise a bare error)."""
    kinds, limits = dict(table.types), {c: (lo, hi) for c, lo, hi in table.bounds}
    for col in [c for c in table.columns if kinds.get(c) is int or c in limits]:
        column, (low, high), nullable = df[col], limits.get(col, (None, None)), col in table.nullable
        values = pd.to_numeric(column.where(column.astype(str) != "", None), errors="coerce")
        missing = values.isna() & ~(nullable & (column.isna() | (column.astype(str) == "")))
        problems = [("not a number", missing),
                    ("not a whole number", (values % 1 != 0) & values.notna() & (kinds.get(col) is int)),
                    (f"below {low}", values < low if low is not None else None),
                    (f"above {high}", values > high if high is not None else None)]
        firsts = [(int(mask.to_numpy().argmax()), why) for why, mask in problems if mask is not None and mask.any()]
        if firsts:
            at, why = min(firsts)
            key = {k: _plain(df[k].iloc[at]) for k in table.key if k in df.columns}
            raise ValueError(f"{where or 'rows'}: {table.name} row {at + 1} {key}, field {col!r}: "
                             f"{_plain(df[col].iloc[at])!r} is {why}")


def _plain(value):
    """A numpy scalar as the Python value it holds (for messages)."""
    return value.item() if hasattr(value, "item") else value


def check_one_config(table: Table, df: pd.DataFrame, where: str | Path = "") -> None:
    """``ValueError`` naming ``where`` and the run when the rows of one run (``table.runs``) carry more than one
    ``config_hash``: rows another config wrote are not this run's (an upsert replaces a run's rows whole, so only
    rows given together can mix)."""
    if "config_hash" not in df.columns or "config_hash" in table.runs or not len(df):
        return
    hashes = df.groupby(list(table.runs), sort=False)["config_hash"].unique()
    mixed = hashes[hashes.map(len) > 1]
    if len(mixed):
        run = dict(zip(table.runs, mixed.index[0] if len(table.runs) > 1 else (mixed.index[0],)))
        raise ValueError(f"{where or 'rows'}: {table.name} run {run} has rows of config_hash "
                         f"{sorted(map(str, mixed.iloc[0]))}: one run's rows come from one config")


def tidy(table: Table, df: pd.DataFrame) -> pd.DataFrame:
    """Schema column order, typed columns cast, rows sorted by key (ranked columns by their given order)."""
    df = df[list(table.fields)].copy()
    for col, kind in table.types + tuple((c, str) for c in table.fields[len(table.columns):]):
        df[col] = df[col].fillna("").astype(str) if kind is str else df[col].astype(kind)
    if not table.sort:
        return df.reset_index(drop=True)
    ranks = {f"_rank_{col}": df[col].map({v: i for i, v in enumerate(order)}) for col, order in table.rank}
    by = [f"_rank_{c}" if f"_rank_{c}" in ranks else c for c in table.key]
    return df.assign(**ranks).sort_values(by, ignore_index=True).drop(columns=list(ranks))


def empty(table: Table) -> pd.DataFrame:
    """A table with the schema's columns and no rows."""
    kinds = dict(table.types)
    return pd.DataFrame({c: pd.Series(dtype=int if kinds.get(c) is int else object) for c in table.fields})


def read(table: Table, path: Path | str) -> pd.DataFrame:
    """The table at ``path``, validated (errors name the file), or an empty one when the file does not exist; a
    file empty or whose last line lacks its newline (cut short) raises."""
    if not Path(path).exists():
        return empty(table)
    if Path(path).stat().st_size == 0:
        raise ValueError(f"{path}: the {table.name} table is empty (not even a header): the file was emptied; "
                         f"restore it (e.g. from git) or delete it to start the table again")
    if not artifacts.ends_with_newline(path):
        raise ValueError(f"{path}: the {table.name} table is cut (its last line has no newline, as every write "
                         f"gives it): restore it (e.g. from git) or delete it; a hand edit must end with a newline")
    text = {c: str for c, kind in table.types if kind is str} | {c: str for c in table.fields[len(table.columns):]}
    try:
        df = pd.read_csv(path, dtype=text, keep_default_na=False, na_values={c: [""] for c in table.nullable})
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: the {table.name} table does not parse as CSV ({err})") from err
    # a file written before its table carried provenance: the missing columns read ``unknown``
    missing = [c for c in PROVENANCE if c not in df.columns] if table.provenance else []
    return validate(table, df.assign(**{c: numerics.UNKNOWN for c in missing}), path)


def write(table: Table, rows: Rows, path: Path | str) -> Path:
    """Write ``rows`` validated and tidy, floats at the table's precision, through a temporary file replaced
    atomically; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = tidy(table, validate(table, stamp(table, rows), path))
    with artifacts.replacing(path) as tmp:
        out.to_csv(tmp, index=False, float_format=table.float_format, lineterminator="\n")
    return path


def run_ids(table: Table, df: pd.DataFrame, extra: tuple[str, ...] = ()) -> list[tuple]:
    """Each row's run (``table.runs`` + ``extra`` fields) as text, floats as the file prints them, so a value read
    back from the file and the value written compare equal."""
    cols = [df[c].map(lambda v: table.float_format % v) if pd.api.types.is_float_dtype(df[c]) else df[c].astype(str)
            for c in list(table.runs) + list(extra)]
    return list(zip(*cols)) if cols and len(df) else []


def run_id(table: Table, fields: Mapping, extra: tuple[str, ...] = ()) -> tuple:
    """``run_ids`` of one row given as a mapping."""
    return tuple(table.float_format % v if isinstance(v, float) else str(v)
                 for v in (fields[c] for c in list(table.runs) + list(extra)))


def upsert(table: Table, stored: pd.DataFrame, rows: Rows) -> pd.DataFrame:
    """``stored`` with ``rows`` added, every old row of a run in ``rows`` replaced; validated and tidy."""
    new = tidy(table, validate(table, stamp(table, rows)))
    fresh = set(run_ids(table, new))
    keep = stored[[r not in fresh for r in run_ids(table, stored)]] if len(stored) else stored
    return tidy(table, validate(table, pd.concat([keep, new], ignore_index=True))) if len(keep) else new


def upsert_file(table: Table, rows: Rows, path: Path | str) -> pd.DataFrame:
    """Upsert ``rows`` into the file at ``path`` (created when absent); return the table as written."""
    out = upsert(table, read(table, path), rows)
    write(table, out, path)
    return out


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub markdown table of ``df`` for the README and the data cards: a named index becomes columns, values
    as ``str`` prints them, a missing value as an em dash."""
    df = df.reset_index() if df.index.name or isinstance(df.index, pd.MultiIndex) else df
    cells = df.astype(object).where(df.notna(), "—").astype(str)
    lines = ["| " + " | ".join(str(c) for c in df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(row) + " |" for row in cells.values.tolist()]
    return "\n".join(lines)
