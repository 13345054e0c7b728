"""The adversarial corpora, shipped in the wheel as package data (``corpora/*.json``).

One copy: the test suite (``tests/adversarial/``) and ``toolcage selftest`` read the same
files. The path corpus is generated, so it is a module, :mod:`._path_corpus`.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

CORPORA = ("marker_corpus.json", "shell_bypass_corpus.json", "ssrf_corpus.json")


@functools.cache
def load_corpus(name: str) -> Any:
    """The parsed JSON of corpus ``name`` (one of :data:`CORPORA`)."""
    if name not in CORPORA:
        raise ValueError(f"no corpus {name!r} (there are: {', '.join(CORPORA)})")
    text = resources.files(__package__).joinpath("corpora", name).read_text("utf-8")
    return json.loads(text)
