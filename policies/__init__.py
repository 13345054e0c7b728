"""Operator policy: the TOML config and the decisions made from it.

Policies decide -- data in, verdict out -- and import nothing of the rest of toolcage.
"""

from ._config import (
    ApprovalConfig,
    ConfigError,
    LimitsConfig,
    OutputStoreConfig,
    ToolcageConfig,
    ToolOverride,
    load_config,
)

__all__ = [
    "ApprovalConfig",
    "ConfigError",
    "LimitsConfig",
    "OutputStoreConfig",
    "ToolOverride",
    "ToolcageConfig",
    "load_config",
]
