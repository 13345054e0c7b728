"""``@tool``: a host-trusted Python function as a tool, declared from its signature.

The parameters' type hints become the JSON Schema (through pydantic, so ``str``, ``int``,
``float``, ``bool``, ``list``, ``dict``, ``Optional``, ``Literal``, enums and nested pydantic
models all work), the docstring's first line the description, and its ``Args:`` section
(or ``:param name:`` lines) the per-parameter descriptions::

    @tool(safety_tier=SafetyTier.READ_ONLY, timeout=5)
    def word_count(text: str, unique: bool = False) -> int:
        \"\"\"Count the words in a text.

        Args:
            text: The text to count.
            unique: Count each distinct word once.
        \"\"\"
        words = text.split()
        return len(set(words) if unique else words)

A parameter annotated :class:`ToolExecutionContext` receives the call's context and is not
part of the schema. Synchronous functions run in a worker thread, so they never block the
event loop; a return value that is not a :class:`ToolResult` becomes its text (strings as
they are, anything else as JSON, also kept in ``details``).
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any, overload

import anyio.to_thread
import pydantic

from ._errors import ToolValidationError, UsageError
from ._result import ToolResult
from ._tool import FunctionDecl, SafetyTier, ToolExecutionContext

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_GOOGLE_ARG = re.compile(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")
_SPHINX_ARG = re.compile(r"^\s*:param\s+(?:[\w\[\], ]+\s+)?(\w+):\s*(.*)$")


class FunctionTool:
    """A Python function wrapped as a :class:`~toolcage.runtime.Tool`."""

    __name__: str

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        safety_tier: SafetyTier = SafetyTier.SIDE_EFFECTING,
        timeout: float = 30.0,
    ) -> None:
        self.func = func
        self.safety_tier = safety_tier
        self.timeout = timeout
        self._is_async = inspect.iscoroutinefunction(func)
        summary, param_docs = parse_docstring(inspect.getdoc(func) or "")
        self._context_param, self._model = _arguments_model(func, param_docs)
        self._decl = FunctionDecl(
            name=name or func.__name__,
            description=description or summary or func.__name__.replace("_", " "),
            parameters=_inline_schema(self._model.model_json_schema()),
        )
        functools.update_wrapper(self, func)

    def schema(self) -> FunctionDecl:
        return self._decl

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        try:
            parsed = self._model.model_validate(args)
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or None
            raise ToolValidationError(
                f"{field or 'arguments'}: {first['msg']}", field=field
            ) from None
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self._context_param is not None:
            kwargs[self._context_param] = ctx
        if self._is_async:
            value = await self.func(**kwargs)
        else:
            call = functools.partial(self.func, **kwargs)
            value = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        return as_result(value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)


@overload
def tool(func: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    safety_tier: SafetyTier = SafetyTier.SIDE_EFFECTING,
    timeout: float = 30.0,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    safety_tier: SafetyTier = SafetyTier.SIDE_EFFECTING,
    timeout: float = 30.0,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Declare a Python function as a tool (see the module docstring)."""

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f, name=name, description=description, safety_tier=safety_tier, timeout=timeout
        )

    return wrap(func) if func is not None else wrap


def as_result(value: Any) -> ToolResult:
    """What a host function returned, as a :class:`ToolResult`."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult.text(value)
    if isinstance(value, pydantic.BaseModel):
        value = value.model_dump(mode="json")
    try:
        return ToolResult.text(json.dumps(value, ensure_ascii=False), details=value)
    except (TypeError, ValueError):
        return ToolResult.text(str(value))


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first line, and per-parameter descriptions (Google ``Args:`` or ``:param x:``)."""
    lines = doc.splitlines()
    summary = lines[0].strip() if lines else ""
    params: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines[1:]:
        if _ARGS_HEADER.match(line):
            in_args, current = True, None
            continue
        if match := _SPHINX_ARG.match(line):
            current = match.group(1)
            params[current] = match.group(2).strip()
            continue
        if in_args:
            if line.strip() and not line.startswith((" ", "\t")):
                in_args, current = False, None  # the next section began
                continue
            if match := _GOOGLE_ARG.match(line):
                indent = len(line) - len(line.lstrip())
                if current is None or indent <= _indent_of_args(lines, current):
                    current = match.group(1)
                    params[current] = match.group(2).strip()
                    continue
            if current is not None and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
    return summary, params


def _indent_of_args(lines: list[str], name: str) -> int:
    for line in lines:
        if _GOOGLE_ARG.match(line) and line.lstrip().startswith(name):
            return len(line) - len(line.lstrip())
    return 0


def _arguments_model(
    func: Callable[..., Any], docs: Mapping[str, str]
) -> tuple[str | None, type[pydantic.BaseModel]]:
    try:
        hints = inspect.get_annotations(func, eval_str=True)
    except Exception as exc:
        raise UsageError(f"cannot read the type hints of {func.__name__}: {exc}") from exc
    context_param = None
    fields: dict[str, Any] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UsageError(f"{func.__name__}: *args and **kwargs cannot be tool parameters")
        annotation = hints.get(param.name)
        if annotation is None:
            raise UsageError(f"{func.__name__}: parameter {param.name!r} needs a type hint")
        if _is_context(annotation):
            context_param = param.name
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (
            annotation,
            pydantic.Field(default, description=docs.get(param.name)),
        )
    model = pydantic.create_model(
        f"{func.__name__}_arguments",
        __config__=pydantic.ConfigDict(extra="forbid"),
        **fields,
    )
    return context_param, model


def _is_context(annotation: Any) -> bool:
    """``ToolExecutionContext``, or an Optional of it."""
    if annotation is ToolExecutionContext:
        return True
    return ToolExecutionContext in typing.get_args(annotation) and all(
        a in (ToolExecutionContext, type(None)) for a in typing.get_args(annotation)
    )


def _inline_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Resolve ``$ref`` to ``$defs`` and drop pydantic's titles: the plain, self-contained
    schema every provider accepts (Gemini accepts no references)."""
    defs = schema.pop("$defs", {})

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                key = ref.removeprefix("#/$defs/")
                if key in seen:
                    raise UsageError(f"recursive model {key!r} cannot be a tool parameter")
                return resolve(
                    {**defs[key], **{k: v for k, v in node.items() if k != "$ref"}},
                    seen | {key},
                )
            return {
                k: resolve(v, seen)
                for k, v in node.items()
                if not (k == "title" and isinstance(v, str))
            }
        if isinstance(node, list):
            return [resolve(v, seen) for v in node]
        return node

    resolved: dict[str, Any] = resolve(schema, frozenset())
    resolved.setdefault("properties", {})
    resolved["additionalProperties"] = False
    return resolved
