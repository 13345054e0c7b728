"""What a selftest found: one :class:`Finding` per attack and target, gathered in a report.

A finding is *held* when the config refused the attack (or the attack reached nothing), and
*escaped* when it got through; an escape names the payload class that got through and the
config key responsible, so that the operator knows which line of the config to change. A
class whose control call failed (:mod:`._controls`), or that the time budget left no room
for or cut short, *could not run*: a run passes only when nothing escaped and every class
ran. The report prints as text for people, as JSON for machines and as JUnit XML for CI,
one ``testcase`` per finding (a ``failure`` for each escape, an ``error`` for a class not
run), in the shape pytest writes.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True, slots=True)
class Finding:
    """The verdict on one attack against one target."""

    attack: str
    """The attack class: ``paths``, ``ssrf``, ``shell``, ``secrets``, ``principals``."""
    target: str
    """What was attacked: a tool and mount, a network tool, the shell, a secret, an agent."""
    payload: str
    """The payload class (a corpus group, such as ``decimal, hex, octal IPv4``)."""
    held: bool
    key: str = ""
    """For an escape: the config key responsible and what it opens."""
    detail: str = ""
    """For an escape: the payload that got through and what it reached."""


@dataclass(slots=True)
class Report:
    """Every finding of a run, and what the run left out."""

    findings: list[Finding] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Classes or parts not run, each with why (the time budget, a disabled shell, ...)."""
    not_run: list[str] = field(default_factory=list)
    """Classes whose control failed, or that the time budget stopped (``class: why``)."""
    seconds: float = 0.0

    @property
    def held(self) -> bool:
        """True when no attack escaped."""
        return not self.escapes

    @property
    def passed(self) -> bool:
        """True when no attack escaped and every class could run."""
        return self.held and not self.not_run

    @property
    def escapes(self) -> list[Finding]:
        return [f for f in self.findings if not f.held]

    def summary(self) -> dict[str, tuple[int, int]]:
        """Per attack class: (attacks held, attacks escaped)."""
        counts: dict[str, tuple[int, int]] = {}
        for f in self.findings:
            held, escaped = counts.get(f.attack, (0, 0))
            counts[f.attack] = (held + f.held, escaped + (not f.held))
        return counts

    def text(self) -> str:
        """The people's report: one line per class, then one per escape."""
        lines = []
        for attack, (held, escaped) in self.summary().items():
            verdict = "ESCAPED" if escaped else "held"
            lines.append(f"{verdict:<8} {attack:<10} {held} held, {escaped} escaped")
        lines.extend(f"NOT RUN  {why}" for why in self.not_run)
        lines.extend(f"skip     {why}" for why in self.skipped)
        for f, times in _first_per_key(self.escapes):
            lines.append(
                f"  {f.attack}: {f.key}" + (f" ({_many(times, 'attack')})" if times > 1 else "")
            )
            lines.append(f"    {f.payload} via {f.target}: {f.detail}")
        if not self.held:
            ok = f"{_many(len(self.escapes), 'attack')} escaped"
        elif self.not_run:
            ok = f"{_many(len(self.not_run), 'class', 'classes')} could not run"
        elif self.findings:
            ok = "every attack held"
        else:
            ok = "nothing attacked: every class was skipped"
        lines.append(f"{ok} ({_many(len(self.findings), 'attack')}, {self.seconds:.1f} s)")
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps(
            {
                "passed": self.passed,
                "held": self.held,
                "seconds": round(self.seconds, 3),
                "summary": {k: {"held": h, "escaped": e} for k, (h, e) in self.summary().items()},
                "escapes": [asdict(f) for f in self.escapes],
                "skipped": self.skipped,
                "not_run": self.not_run,
                "attacks": len(self.findings),
            },
            indent=2,
            ensure_ascii=False,
        )

    def to_junit(self) -> str:
        """JUnit XML: a ``testsuites`` root with one ``testsuite`` per attack class, one
        ``testcase`` per (target, payload class), a ``failure`` listing its escapes; each
        part of a class that could not run (a failed control, the time budget) is one more
        ``testcase`` of its suite, named ``not run``, with an ``error``."""
        root = ET.Element("testsuites", name="toolcage selftest")
        grouped: dict[str, dict[tuple[str, str], list[Finding]]] = {}
        for f in self.findings:
            grouped.setdefault(f.attack, {}).setdefault((f.target, f.payload), []).append(f)
        errors: dict[str, list[str]] = {}
        for line in self.not_run:
            attack, _, why = line.partition(": ")
            grouped.setdefault(attack, {})
            errors.setdefault(attack, []).append(why)
        for attack, cases in grouped.items():
            failures = sum(any(not f.held for f in found) for found in cases.values())
            broken = errors.get(attack, [])
            suite = ET.SubElement(
                root,
                "testsuite",
                name=f"selftest.{attack}",
                tests=str(len(cases) + len(broken)),
                failures=str(failures),
                errors=str(len(broken)),
                skipped="0",
                time=f"{self.seconds:.3f}" if cases else "0.000",
            )
            for (target, payload), found in cases.items():
                case = ET.SubElement(
                    suite, "testcase", classname=f"selftest.{attack}", name=f"{target}: {payload}"
                )
                escaped = [f for f in found if not f.held]
                if escaped:
                    failure = ET.SubElement(case, "failure", message=escaped[0].key)
                    failure.text = "\n".join(f"{f.key}: {f.detail}" for f in escaped)
            for why in broken:
                case = ET.SubElement(
                    suite, "testcase", classname=f"selftest.{attack}", name="not run"
                )
                ET.SubElement(case, "error", message=f"could not run: {why}").text = why
        return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _first_per_key(escapes: list[Finding], most: int = 40) -> list[tuple[Finding, int]]:
    """The first escape per (class, key) with how many share it, so a wide-open key is
    one line, not hundreds."""
    counted: dict[tuple[str, str], list[Finding]] = {}
    for f in escapes:
        counted.setdefault((f.attack, f.key), []).append(f)
    return [(same[0], len(same)) for same in list(counted.values())[:most]]


def _many(n: int, one: str, more: str = "") -> str:
    return f"{n} {one if n == 1 else more or one + 's'}"
