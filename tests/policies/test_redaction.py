"""The one redactor: its rules on the shapes credentials take in text, and the log filter.

The shapes are data: each case is a text and what the redactor makes of it, so a reader
sees at a glance what is caught and what is left alone (prose stays readable).
"""

from __future__ import annotations

import io
import json
import logging
import re
from pathlib import Path

import pytest
from toolcage.policies import Redactor, SecretValues
from toolcage.policies._log_format import JsonFormatter, TextFormatter
from toolcage.policies._log_redaction import LOG_FILTER, LOGGERS, redact_logs

ROOT = Path(__file__).resolve().parents[2]

# (text, redacted) -- each group commented with the syntax it stands for.
SHAPES = [
    # key=value and key = value, inline and as lines (INI, TOML, .env, properties)
    ("password=hunter2&page=2", "password=[REDACTED]&page=2"),
    ('password = "hunter2"', 'password = "[REDACTED]"'),
    ("api_key = abc def ghi", "api_key = [REDACTED]"),
    (
        "[db]\nhost = x\npassword = two words\nport = 1",
        "[db]\nhost = x\npassword = [REDACTED]\nport = 1",
    ),
    ("export API_TOKEN=abc123\nDEBUG=1", "export API_TOKEN=[REDACTED]\nDEBUG=1"),
    ("db.password=hunter2", "db.password=[REDACTED]"),
    ('password = """two\nlines"""', 'password = """[REDACTED]"""'),
    ("retry with passwd = hunter2 later", "retry with passwd = [REDACTED] later"),
    ("GIT_PASSWORD=hunter2 git push", "GIT_PASSWORD=[REDACTED] git push"),
    ("--password=hunter2 --user bob", "--password=[REDACTED] --user bob"),
    ("https://x/?api_key=abc&q=1", "https://x/?api_key=[REDACTED]&q=1"),
    # YAML and HTTP headers
    ("db:\n  password: hunter2\n  user: app", "db:\n  password: [REDACTED]\n  user: app"),
    ("- token: abc\n- name: x", "- token: [REDACTED]\n- name: x"),
    ("Cookie: a=b; c=d\nAccept: */*", "Cookie: [REDACTED]\nAccept: */*"),
    ("login failed, password: hunter2", "login failed, password: [REDACTED]"),
    # JSON: whole, after a BOM, in prose, cut short, escaped in a string, nested values
    ('{"password": "x", "user": "u"}', '{"password": "[REDACTED]", "user": "u"}'),
    ('\ufeff{"token": "x"}', '\ufeff{"token": "[REDACTED]"}'),
    ('said {"api_key": "x"} then', 'said {"api_key": "[REDACTED]"} then'),
    ('{"password": "hunter2 and the res', '{"password": "[REDACTED]'),
    ('{"b": "{\\"secret\\": \\"x\\"}"}', '{"b": "{\\"secret\\": \\"[REDACTED]\\"}"}'),
    ('{"credentials": {"u": "a", "p": "b"}, "n": 1}', '{"credentials": "[REDACTED]", "n": 1}'),
    ('{"password": 12345678}', '{"password": [REDACTED]}'),
    ('{"password": "a\\"b", "n": 1}', '{"password": "[REDACTED]", "n": 1}'),
    # Python reprs
    ("{'user': 'u', 'password': 'x'}", "{'user': 'u', 'password': '[REDACTED]'}"),
    ("Creds(user='u', secret_key='x')", "Creds(user='u', secret_key='[REDACTED]')"),
    ('path \'/a/{"token": \\"x\\"}\'', 'path \'/a/{"token": \\"[REDACTED]\\"}\''),
    # names as models and libraries spell them
    ("accessToken=abc", "accessToken=[REDACTED]"),
    ("XApiKey: abc", "XApiKey: [REDACTED]"),
    ("DB_PASS=abc", "DB_PASS=[REDACTED]"),
    # token shapes, wherever they stand
    ("use Bearer abc.def-ghi now", "use [REDACTED] now"),
    ("key sk-0123456789abcdefghij here", "key [REDACTED] here"),
    ("https://user:pw123@example.com/", "https://[REDACTED]@example.com/"),
    # left alone: prose, placeholders, URLs, counts
    ("field 'password': expected a string", "field 'password': expected a string"),
    ("the token is missing", "the token is missing"),
    ("X-Api-Key: {{secret:api}}", "X-Api-Key: [REDACTED]"),
    ("name {{secret:api}} here", "name {{secret:api}} here"),
    ("max_tokens=100 bypass=1", "max_tokens=100 bypass=1"),
    ("see https://example.com/token", "see https://example.com/token"),
    ("password=[REDACTED]", "password=[REDACTED]"),
]


class TestShapes:
    @pytest.mark.parametrize(("text", "redacted"), SHAPES)
    def test_shape(self, text: str, redacted: str) -> None:
        assert Redactor().text(text) == redacted


class TestRedactor:
    def test_values_are_redacted_by_key_and_by_content(self) -> None:
        value = {
            "url": "https://x/?api_key=1",
            "headers": {"Cookie": "a=b", "X-Tenant": "t9", "Accept": "*/*"},
            "items": [{"secret_value": {"a": 1}}, "password: x"],
            "count": 3,
            "token": None,
        }
        assert Redactor(keys=["x-tenant"]).value(value) == {
            "url": "https://x/?api_key=[REDACTED]",
            "headers": {"Cookie": "[REDACTED]", "X-Tenant": "[REDACTED]", "Accept": "*/*"},
            "items": [{"secret_value": "[REDACTED]"}, "password: [REDACTED]"],
            "count": 3,
            "token": None,
        }

    def test_a_long_string_is_redacted_whole_then_cut(self) -> None:
        text = '{"pad": "' + "x" * 3000 + '", "password": "hunter2"}' + "y" * 10
        cut = Redactor().text(text, max_chars=3020)
        assert "hunter2" not in cut
        assert cut.endswith("more characters]")

    def test_a_value_running_past_the_margin_is_redacted_up_to_the_cut(self) -> None:
        text = "x" * 100 + '{"password": "' + "p" * 20_000 + '"} and more'
        cut = Redactor().text(text, max_chars=200)
        assert cut.startswith("x" * 100 + '{"password": "[REDACTED]')
        assert "pp" not in cut

    def test_a_match_cut_by_the_margin_never_reaches_the_kept_part(self) -> None:
        """Redaction before the cut shrank the text: the token the margin cut short would
        fall inside the kept part, so the whole string is redacted instead."""
        shaped = "sk-0123456789abcdefghijklmnop"
        text = "password=" + "p" * 5_000 + " " + shaped + " " + "y" * 20_000
        at = text.index(shaped)
        cut = Redactor().text(text, max_chars=at + 8 - 4096)
        assert "sk-0123" not in cut
        assert cut.startswith("password=[REDACTED] [REDACTED] yyy")

    def test_operator_patterns_and_secret_values(self) -> None:
        secrets = SecretValues([("api", "s3cr3t+value/0123=")])
        redactor = Redactor(patterns=["tenant-[0-9]+"], secrets=secrets)
        assert redactor.text("tenant-42 s3cr3t%2Bvalue%2F0123%3D") == (
            "[REDACTED] [redacted secret api]"
        )

    @pytest.mark.parametrize(
        ("key", "secret"),
        [
            ("password", True),
            ("Proxy-Authorization", True),
            ("x_api_key", True),
            ("refreshToken", True),
            ("GITHUB_TOKEN", True),
            ("secret_value", True),
            ("db.passwd", True),
            ("tokens", False),
            ("max_tokens", False),
            ("author", False),
            ("passenger", False),
            ("session_id", False),
        ],
    )
    def test_which_keys_name_a_credential(self, key: str, secret: bool) -> None:
        assert Redactor().is_secret_key(key) is secret


class TestSecretValues:
    VALUE = "s3cr3t+value/0123="

    @pytest.mark.parametrize(
        "carrier",
        [
            "s3cr3t+value/0123=",
            "s3cr3t%2Bvalue%2F0123%3D",
            "s3cr3t+value%2F0123=",  # only some characters encoded
            "s3cr3t%252Bvalue%252F0123%253D",  # encoded twice
            "s3cr3t%2bvalue%2f0123%3d",
            "s3cr3t\\u002bvalue\\/0123=",
        ],
    )
    def test_a_carried_value_is_found_however_encoded(self, carrier: str) -> None:
        values = SecretValues([("api", self.VALUE), ("other", "another-value-1234")])
        assert values.carried({"api"}, [f"https://x/?q={carrier}"], b"") == "api"
        assert values.carried({"api"}, [], f"data={carrier}".encode()) == "api"
        assert values.carried({"other"}, [carrier], carrier.encode()) is None


class TestLogRecords:
    def test_every_toolcage_logger_is_redacted(self) -> None:
        asked = set()
        for path in [*ROOT.glob("runtime/**/*.py"), *ROOT.glob("*/[!.]*.py")]:
            text = path.read_text(encoding="utf-8")
            asked |= set(re.findall(r"""getLogger\(["'](toolcage[\w.]*)["']\)""", text))
        for folder in ("host_bindings", "sidecar", "policies"):
            for path in (ROOT / folder).rglob("*.py"):
                text = path.read_text(encoding="utf-8")
                asked |= set(re.findall(r"""getLogger\(["'](toolcage[\w.]*)["']\)""", text))
        assert asked
        assert asked <= set(LOGGERS), asked - set(LOGGERS)

    def test_message_fields_and_exception_are_redacted(self) -> None:
        secrets = SecretValues([("api", "s3cr3t+value/0123=")])
        redactor = Redactor(secrets=secrets)
        redact_logs(redactor)
        out = io.StringIO()
        handler = logging.StreamHandler(out)
        handler.setFormatter(JsonFormatter(tracebacks=True))
        logger = logging.getLogger("toolcage.test_redaction")
        logger.addHandler(handler)
        logger.propagate = False
        logger.addFilter(LOG_FILTER)
        try:
            raise ValueError("connect with password=hunter2")
        except ValueError:
            logger.exception(
                "call %s failed: token=%s",
                "x",
                "abcdef",
                extra={"event": "t", "url": "https://h/?k=s3cr3t%2Bvalue%2F0123%3D"},
            )
        finally:
            logger.removeHandler(handler)
            logger.removeFilter(LOG_FILTER)
        record = json.loads(out.getvalue())
        assert record["message"] == "call x failed: token=[REDACTED]"
        assert record["url"] == "https://h/?k=[redacted secret api]"
        assert record["error"] == "ValueError: connect with password=[REDACTED]"
        assert "hunter2" not in record["traceback"]
        assert "password=[REDACTED]" in record["traceback"]

    def test_the_text_formatter_writes_the_redacted_record(self) -> None:
        record = logging.LogRecord("x", logging.ERROR, "f", 1, "secret=%s", ("abc",), None)
        LOG_FILTER.filter(record)
        assert "secret=[REDACTED]" in TextFormatter().format(record)
