"""``toolcage selftest``: the adversarial corpora against an operator's own config.

A part above the assembly: it drives ``Runtime.from_config`` + ``execute`` as a host does,
in a scratch copy of the config's world (:mod:`._scratch`), one module per attack class
(:mod:`._paths`, :mod:`._races`, :mod:`._ssrf`, :mod:`._shell`, :mod:`._secrets`,
:mod:`._principals`, each one ``attack`` entry point registered in :mod:`._engine`; the
recording servers on loopback they aim at in :mod:`._recorder`), each after a control call
that must work (:mod:`._controls`), and reports held, escaped or not run per class with the
config key responsible (:mod:`._report`). Only ``cli`` imports it. The corpora ship here as
package data and are shared with the test suite.
"""

from ._corpora import CORPORA, load_corpus
from ._engine import CLASSES, run_selftest
from ._path_corpus import ROOT, hostile_paths
from ._report import Finding, Report

__all__ = [
    "CLASSES",
    "CORPORA",
    "ROOT",
    "Finding",
    "Report",
    "hostile_paths",
    "load_corpus",
    "run_selftest",
]
