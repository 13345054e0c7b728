"""Provider adapters: one wire format each, behind :class:`ProviderAdapter`.

The public names of :mod:`toolcage.runtime.agent.providers`, where the adapters live beside
the agent loop that uses them (and where they are listed, once).
"""

from .agent.providers import *  # noqa: F403 -- this module is their public face
from .agent.providers import __all__ as __all__
