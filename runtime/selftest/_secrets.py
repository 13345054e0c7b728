"""Secrets: would a credential be sent to a host its owner does not control?

For each ``[secrets.NAME]``, the binding the host applies to every request
(``SecretConfig.applies``, the same test the HTTP binding makes on each hop) is asked about
requests an attacker can provoke: to hosts anyone can register beneath a shared-hosting or
public suffix (``attacker.github.io``), to a host of another port, and over plain ``http``
(readable on the way). A binding that says yes to one of them is an escape, blamed on the
``hosts`` entry or ``schemes`` that said it.
"""

from __future__ import annotations

from toolcage.policies import ToolcageConfig

from ._report import Finding

SHARED_SUFFIXES = (
    "github.io", "githubusercontent.com", "gitlab.io", "herokuapp.com", "vercel.app",
    "netlify.app", "pages.dev", "workers.dev", "appspot.com", "web.app", "firebaseapp.com",
    "azurewebsites.net", "cloudfront.net", "s3.amazonaws.com", "blob.core.windows.net",
    "ngrok.io", "ngrok-free.app", "glitch.me", "repl.co", "onrender.com", "fly.dev",
    "co.uk", "com.au", "co.jp", "com.br", "co.nz", "co.za", "com.cn", "org.uk",
)  # fmt: skip
"""Suffixes under which anyone can have a name of their own."""
WAYS = [(s, m) for s in ("https", "http") for m in ("GET", "POST", "PUT", "DELETE", "HEAD")]
"""Every scheme and method a request may use."""


def attack(config: ToolcageConfig) -> list[Finding]:
    found = []
    for name, secret in config.secrets.items():
        key = ""
        for i, entry in enumerate(secret.hosts):
            host = entry.lower().removeprefix("*.").rstrip(".").rsplit(":", 1)[0]
            if entry.startswith("*.") and host in SHARED_SUFFIXES:
                probe = f"selftest-attacker.{host}"
                if any(secret.applies(s, probe, _port(s), "/", m) for s, m in WAYS):
                    key = f"secrets.{name}.hosts.{i}: {entry!r} sends it to {probe}"
                    break
        found.append(
            Finding("secrets", f"secrets.{name}", "hosts anyone can register", not key, key)
        )
        cleartext = "http" in secret.schemes
        found.append(
            Finding(
                "secrets",
                f"secrets.{name}",
                "plain http",
                not cleartext,
                f"secrets.{name}.schemes: 'http' sends it unencrypted" if cleartext else "",
            )
        )
    return found


def _port(scheme: str) -> int:
    return 443 if scheme == "https" else 80
