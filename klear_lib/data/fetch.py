"""Where a real source's raw records come from: an offline mirror, the Hugging Face Hub, or a pinned git file.

The order (``docs/design.md`` "Data sources"):

1. **Mirror** — a folder named by ``$KLEAR_BENCHMARKS`` holding the source's files at their registered relative
   paths (the layout is in the README, "Real data"). Used whenever the variable is set and the files are there.
2. **Hub** — ``datasets.load_dataset(hub_id, config, split=..., revision=...)`` at the registered revision, into
   the normal HF cache. ``HF_HUB_OFFLINE=1`` reads that cache only.
3. **Pinned git file** — sources that exist only as files in a public git repository are downloaded at their
   registered commit through ``datasets``' download cache and checked against their sha256.

A source found nowhere raises ``SourceUnavailable``, which names the source, the hub id, the revision and the
environment variable, and carries a short ``reason`` that notebooks print when they skip it.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from datasets import DownloadConfig, load_dataset
from datasets.utils.file_utils import cached_path

log = logging.getLogger(__name__)
MIRROR_ENV = "KLEAR_BENCHMARKS"
HUB_ENDPOINT = "https://huggingface.co"
GIT_RAW = "https://raw.githubusercontent.com"
_BRACKET_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')  # a JSON string (maybe unclosed), or a bracket


@dataclass(frozen=True)
class MirrorFile:
    """One file of a source: its path inside a mirror, where it was published (repo, commit, path), its sha256."""

    path: str
    repo: str          # "owner/name" on GitHub
    commit: str        # 40-hex commit of ``repo`` that holds this exact blob
    repo_path: str
    sha256: str

    @property
    def url(self) -> str:
        return f"{GIT_RAW}/{self.repo}/{self.commit}/{self.repo_path}"


class SourceUnavailable(FileNotFoundError):
    """A source that neither the mirror nor the network could provide; ``reason`` is short and path-free."""

    def __init__(self, src, reason: str):
        self.source, self.reason = src.name, reason
        where = (f"hub dataset {src.hub_id} at revision {src.revision or 'UNVERIFIED (default branch)'}"
                 if src.hub_id else "its pinned git files " + ", ".join(f"{f.repo}@{f.commit[:12]}:{f.repo_path}"
                                                                      for f in src.mirror_files))
        files = ", ".join(f.path for f in src.mirror_files) or "none: this source has no mirror layout"
        super().__init__(
            f"source {src.name!r} is unavailable ({reason}). It loads from {where}; or set {MIRROR_ENV} to an "
            f"offline mirror folder holding: {files} (README, 'Real data').")


def mirror_dir() -> Path | None:
    """The mirror folder from ``$KLEAR_BENCHMARKS``; None when unset or empty (a set, missing folder raises)."""
    value = os.environ.get(MIRROR_ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    if not path.is_dir():
        raise FileNotFoundError(f"{MIRROR_ENV}={value} is not a folder: point it at a mirror, or unset it to load "
                                "from the hub")
    return path


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on")


@functools.lru_cache(maxsize=8)
def reachable(url: str, timeout_s: float = 3.0) -> bool:
    """Whether a TCP connection to ``url``'s host opens within ``timeout_s`` (once per host and process): without
    a network, the hub client would otherwise retry for about half a minute per source."""
    parsed = urlparse(url)
    try:
        socket.create_connection((parsed.hostname, parsed.port or 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False


def _network_reason(url: str) -> str | None:
    if _offline():
        return "HF_HUB_OFFLINE is set"
    return None if reachable(url) else "no network"


def _json(text: str, path: Path, line: int | None = None):
    """``text`` parsed; invalid JSON, or JSON nested deeper than Python parses, raises ``ValueError`` naming the
    file and line (``line`` or where it fails)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: line {line or err.lineno}: invalid JSON ({err.msg}, column {err.colno})") from None
    except RecursionError:
        raise ValueError(f"{path}: line {line or _deep_line(text)}: JSON nested too deep to parse") from None


def _deep_line(text: str, depth: int = 500) -> int:
    """The line where ``text``'s brackets (outside strings) first nest ``depth`` deep (1 when they never do)."""
    level = 0
    for m in _BRACKET_OR_STRING.finditer(text):
        level += {"[": 1, "{": 1, "]": -1, "}": -1}.get(m.group(), 0)
        if level >= depth:
            return text.count("\n", 0, m.start()) + 1
    return 1


def read_records(path: Path) -> list[tuple[str, object]]:
    """``(place, record)`` for each record of a ``.json`` array or ``.jsonl`` file; ``place`` is
    ``<path>: line N`` (JSONL) or ``<path>: record N`` (the array's N-th item), both 1-based. Bytes that are not
    UTF-8, invalid JSON and JSON nested too deep raise ``ValueError`` naming the file and line."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{path}: line {line}: not UTF-8 ({err.reason} at byte {err.start})") from None
    if path.suffix == ".json":
        records = _json(text, path)
        if not isinstance(records, list):
            raise ValueError(f"{path}: not a JSON array but {type(records).__name__}")
        return [(f"{path}: record {k}", rec) for k, rec in enumerate(records, 1)]
    # split on newlines only: str.splitlines would also cut at U+2028 and friends, which JSON strings may hold
    return [(f"{path}: line {k}", _json(ln, path, k)) for k, ln in enumerate(text.split("\n"), 1) if ln.strip()]


def sha256_file(path: Path) -> str:
    """sha256 of a file, read in 1 MiB blocks (the code set is gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def hub_records(src) -> list[dict]:
    """Raw records of a hub dataset at the pinned revision (its ``hub_files`` when it names them)."""
    reason = _network_reason(os.environ.get("HF_ENDPOINT", HUB_ENDPOINT))
    if reason and not _offline():
        raise SourceUnavailable(src, reason)
    if src.revision is None:
        log.warning("%s: no pinned revision (UNVERIFIED); loading the default branch of %s", src.name, src.hub_id)
    try:
        if src.hub_files:  # loading-script repos: read their data files with the generic builder
            files = [f"hf://datasets/{src.hub_id}@{src.revision or 'main'}/{f}" for f in src.hub_files]
            builder = "parquet" if src.hub_files[0].endswith(".parquet") else "json"
            return list(load_dataset(builder, data_files=files, split="train"))
        return list(load_dataset(src.hub_id, src.hub_config, split=src.hub_split, revision=src.revision))
    except Exception as err:  # datasets raises many types (ConnectionError, FileNotFoundError, ValueError, ...)
        raise SourceUnavailable(src, reason or f"hub error: {type(err).__name__}") from err


def git_file(src, f: MirrorFile) -> Path:
    """One pinned git file through ``datasets``' download cache, sha256-checked."""
    reason = _network_reason(GIT_RAW)
    try:
        path = Path(cached_path(f.url, download_config=DownloadConfig(local_files_only=bool(reason))))
    except Exception as err:
        raise SourceUnavailable(src, reason or f"download error: {type(err).__name__}") from err
    if (digest := sha256_file(path)) != f.sha256:
        raise ValueError(f"{src.name}: {f.url} has sha256 {digest}, registered {f.sha256}")
    return path


def locate(src, mode: str = "auto") -> tuple[str, list[Path] | None]:
    """Where ``src`` will load from: ``("mirror", paths)``, ``("git", None)`` or ``("hub", None)``.

    ``mode``: ``auto`` (mirror when present, else the network), ``mirror`` (the mirror or an error) or ``hub``
    (the network only: the hub dataset, or the pinned git files of a source with no hub id).
    """
    if mode not in ("auto", "mirror", "hub"):
        raise ValueError(f"mode must be auto, mirror or hub, not {mode!r}")
    root = mirror_dir() if mode != "hub" else None
    if root is not None and src.mirror_files:
        paths = [root / f.path for f in src.mirror_files]
        if not (missing := [str(p.relative_to(root)) for p in paths if not p.is_file()]):
            return "mirror", paths
        log.warning("%s: the mirror %s lacks %s", src.name, root, ", ".join(missing))
    if mode == "mirror":
        why = f"{MIRROR_ENV} is unset" if root is None else "the mirror lacks its files"
        raise SourceUnavailable(src, why if src.mirror_files else "no mirror layout: hub only")
    return ("hub", None) if src.hub_id else ("git", None)
