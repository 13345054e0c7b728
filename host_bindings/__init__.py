"""Capabilities the host lends to WASI guests, and the stores behind them."""

from ._base import CallState, HostBinding, current_call

__all__ = ["CallState", "HostBinding", "current_call"]
