"""Operator policy: the TOML config and the decisions made from it.

Policies decide -- data in, verdict out -- and import nothing of the rest of toolcage.
"""

from ._addresses import blocked_reason
from ._audit import AuditConfig, TelemetryConfig
from ._channel import ChannelConfig
from ._concurrency import Concurrency, ConcurrencyKind
from ._config import (
    AgentConfig,
    ApprovalConfig,
    ConfigError,
    LimitsConfig,
    LoopLimits,
    OutputStoreConfig,
    ToolcageConfig,
    ToolOverride,
    load_config,
)
from ._delegation import DelegationConfig
from ._egress import (
    EgressConfig,
    EgressPolicy,
    EgressRules,
    EgressViolation,
    WebSearchConfig,
)
from ._host_template import HostTemplate
from ._images import ImagesConfig
from ._limits import ToolLimits, ToolLimitsTable
from ._mcp import McpConfig, McpServerConfig
from ._mount_areas import MountArea, MountError, MountsConfig
from ._mounts import GrantedMount, MountPolicy
from ._paths import PathPolicyViolation, canonical_guest_path
from ._principal import (
    ApprovalScope,
    Principal,
    PrincipalError,
    SessionKind,
    SessionLink,
    path_segment,
)
from ._public import publish
from ._rate_limits import RateLimitConfig, RateRule
from ._redaction import Redactor
from ._scheduler import SchedulerConfig
from ._secret_forms import SecretValues
from ._secret_policy import HopCredentials, Secret, SecretMisuse, SecretPolicy, SecretViolation
from ._secrets import SecretConfig
from ._state import EmbedderConfig, StateConfig, VaultConfig
from ._truncation import truncation_marker
from .shell import (
    ShellConfig,
    ShellLimits,
    ShellMode,
    ShellPolicy,
    ShellPolicyViolation,
    ShellSyntax,
    ShellVerdict,
    protected_env_reason,
)

__all__ = [
    "AgentConfig",
    "ApprovalConfig",
    "ApprovalScope",
    "AuditConfig",
    "ChannelConfig",
    "Concurrency",
    "ConcurrencyKind",
    "ConfigError",
    "DelegationConfig",
    "EgressConfig",
    "EgressPolicy",
    "EgressRules",
    "EgressViolation",
    "EmbedderConfig",
    "GrantedMount",
    "HopCredentials",
    "HostTemplate",
    "ImagesConfig",
    "LimitsConfig",
    "LoopLimits",
    "McpConfig",
    "McpServerConfig",
    "MountArea",
    "MountError",
    "MountPolicy",
    "MountsConfig",
    "OutputStoreConfig",
    "PathPolicyViolation",
    "Principal",
    "PrincipalError",
    "RateLimitConfig",
    "RateRule",
    "Redactor",
    "SchedulerConfig",
    "Secret",
    "SecretConfig",
    "SecretMisuse",
    "SecretPolicy",
    "SecretValues",
    "SecretViolation",
    "SessionKind",
    "SessionLink",
    "ShellConfig",
    "ShellLimits",
    "ShellMode",
    "ShellPolicy",
    "ShellPolicyViolation",
    "ShellSyntax",
    "ShellVerdict",
    "StateConfig",
    "TelemetryConfig",
    "ToolLimits",
    "ToolLimitsTable",
    "ToolOverride",
    "ToolcageConfig",
    "VaultConfig",
    "WebSearchConfig",
    "blocked_reason",
    "canonical_guest_path",
    "load_config",
    "path_segment",
    "protected_env_reason",
    "truncation_marker",
]

publish(globals(), __all__)
del publish
