"""Secrets: would a credential be sent to a host its owner does not control?

For each ``[secrets.NAME]``, the binding the host applies to every request
(``SecretConfig.applies``, the same test the HTTP binding makes on each hop) is asked about
requests an attacker can provoke: to hosts anyone can register beneath a shared-hosting or
public suffix (``attacker.github.io``), to a host of another port, and over plain ``http``
(readable on the way). A binding that says yes to one of them is an escape, blamed on the
``hosts`` entry or ``schemes`` that said it.

:func:`sent` then tries it for real, with ``Runtime.execute``: ``{{secret:NAME}}`` in a
header of ``http_request`` (and, for a secret the host adds itself, a request naming none)
to a recording host on ``127.0.0.1`` the secret is not bound to, directly and by redirects
from a bound host. The recorder seeing the value in any form the host redacts
(:func:`~toolcage.policies._secret_forms.secret_forms`) is an escape. The control: the
scratch config binds each secret to one more recorder as well (:func:`bind_control`,
over plain http, its paths and methods kept), and there the value must arrive, or the
class is reported as skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from toolcage.policies import ToolcageConfig
from toolcage.policies._secret_forms import secret_forms
from toolcage.policies._secrets import SecretConfig, host_patterns

from .._runtime import Runtime
from ._base import AttackContext, Outcome
from ._corpora import load_corpus
from ._recorder import Bait, Recorder
from ._report import Finding
from ._scratch import Scratch

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


async def attack(ctx: AttackContext) -> Outcome:
    """Each binding asked about hosts it should refuse, then each secret sent for real."""
    found = bindings(ctx.config)
    sent_found, skipped = await sent(
        ctx.runtime, ctx.config, ctx.scratch, ctx.bait, ctx.within_budget
    )
    return Outcome(found + sent_found, skipped)


def bindings(config: ToolcageConfig) -> list[Finding]:
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


def bind_control(config: ToolcageConfig, address: str) -> ToolcageConfig:
    """``config`` with each secret bound to ``address`` (``IP:PORT``) as well, over http."""
    moved = {
        name: secret.model_copy(
            update={
                "hosts": (*secret.hosts, address),
                "schemes": tuple(dict.fromkeys((*secret.schemes, "http"))),
            }
        )
        for name, secret in config.secrets.items()
    }
    return config.model_copy(update={"secrets": moved}) if moved else config


async def sent(
    runtime: Runtime,
    config: ToolcageConfig,
    scratch: Scratch,
    bait: Bait,
    within_budget: Callable[[], bool],
) -> tuple[list[Finding], list[str]]:
    """Each secret sent for real to a host it is not bound to; what could not run, and why."""
    found: list[Finding] = []
    skipped: list[str] = []
    if "http_request" not in runtime.registry:
        return found, skipped
    for name, secret in config.secrets.items():
        if not within_budget():
            break
        probe = _Probe(runtime, secret, scratch.secret_values[name])
        if not await probe.carried(bait.bound, bait.bound.url + probe.path, probe.asked(name)):
            skipped.append(f"secrets: {name} did not reach the host it is bound to (control)")
            continue
        escapes = await _attacks(probe, name, bait, within_budget)
        for payload, where in escapes.items():
            key = _blame(name, secret, bait.unbound) if where else ""
            found.append(
                Finding("secrets", f"secrets.{name}", payload, not where, key, "; ".join(where[:3]))
            )
    return found, skipped


class _Probe:
    """Requests for one secret, each made on the secret's own path and method."""

    def __init__(self, runtime: Runtime, secret: SecretConfig, value: str) -> None:
        self.runtime = runtime
        self.forms = secret_forms(value)
        self.path = secret.paths[0] if secret.paths else "/"
        self.method = secret.methods[0] if secret.methods else "GET"
        self.added_by_host = secret.added_by_host

    @staticmethod
    def asked(name: str) -> dict[str, str]:
        return {"X-Selftest": "{{secret:%s}}" % name}  # noqa: UP031 (braces are the syntax)

    async def carried(self, to: Recorder, url: str, headers: dict[str, str]) -> bool:
        """Whether ``to`` saw the value, in any form, on the request to ``url``."""
        before = len(to.seen)
        args: dict[str, Any] = {"url": url, "method": self.method, "headers": headers}
        await self.runtime.execute("http_request", args)
        return any(form in seen for seen in to.seen[before:] for form in self.forms)


async def _attacks(
    probe: _Probe, name: str, bait: Bait, within_budget: Callable[[], bool]
) -> dict[str, list[str]]:
    """Per payload class, the URLs or redirect targets that carried the value to ``unbound``."""
    unbound = bait.unbound
    escapes: dict[str, list[str]] = {}
    tries = {"{{secret:NAME}} to a host it is not bound to": probe.asked(name)}
    if probe.added_by_host:
        tries["added by the host, to a host it is not bound to"] = {}
    for payload, headers in tries.items():
        url = unbound.url + probe.path
        escapes[payload] = [url] if await probe.carried(unbound, url, headers) else []
    payload = "a redirect from a bound host"
    escapes[payload] = []
    for hop in load_corpus("ssrf_corpus.json")["secret_redirects"]:
        if not within_budget():
            break
        target = hop.replace("{sink}", str(unbound.port)).replace("{self}", str(bait.bound.port))
        url = f"{bait.bound.url}/go?" + urlencode({"to": target})
        if await probe.carried(unbound, url, probe.asked(name)):
            escapes[payload].append(target)
    return escapes


def _blame(name: str, secret: SecretConfig, to: Recorder) -> str:
    """The operator's ``hosts`` entry that binds the secret to ``to``, if one does."""
    for i, pattern in enumerate(host_patterns(secret.hosts)):
        if pattern.matches("http", "127.0.0.1", to.port):
            return f"secrets.{name}.hosts.{i}: {secret.hosts[i]!r} sends it to {to.address}"
    return f"secrets.{name}: sent to {to.address}, which no hosts entry names"
