"""``@tool``: a host-trusted Python function as a tool, declared from its signature.

The parameters' type hints become the JSON Schema (through pydantic, so ``str``, ``int``,
``float``, ``bool``, ``list``, ``dict``, ``Optional``, ``Literal``, enums, nested pydantic
models and ``Annotated[int, Field(ge=1, description=...)]`` constraints all work). The
docstring, without its parameter section, is the description; the parameter section --
Google ``Args:``, NumPy ``Parameters`` or Sphinx ``:param x:``, read by ``docstring_parser``
-- gives each parameter's description, unless its ``Field`` has one::

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
part of the schema. A return value that is not a :class:`ToolResult` becomes its text
(strings as they are, anything else as JSON, also kept in ``details``).

Synchronous functions run in a daemon worker thread, so they block neither the event loop
nor the process's exit. At the deadline the call returns ``timeout``, but Python cannot stop
a thread: the function runs on until it returns, and what it does meanwhile still happens.
``@tool(process=True)`` runs each call in a worker process instead, killed at the deadline
(see :mod:`._process_call` for what that asks of the function).

``@tool(concurrency="limited(4)")`` declares how many calls may run at once (``parallel``,
``serial``, ``limited(N)``, ``exclusive_by_type(TYPE, ARG, ...)``, or a
:class:`~toolcage.policies.Concurrency`); the operator's ``[tools.NAME] concurrency``
overrides it, and a bad value is a :class:`UsageError` here (see :mod:`._concurrency`).

``@tool(client_side=True)`` declares a tool the host's own client runs (a browser action, a
device's sensor): the function only declares it, its body never runs; a call is validated
and answered with a ``pending`` result naming its call id, and ``run_turn`` stops until the
host gives the results (see :mod:`.agent._loop`).
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable, Mapping
from typing import Any, overload

import docstring_parser
import pydantic
from pydantic.fields import FieldInfo
from toolcage.policies import Concurrency

from ._errors import ToolValidationError, UsageError
from ._process_call import call_in_process, importable_name
from ._result import ToolResult
from ._threads import run_in_worker
from ._tool import FunctionDecl, SafetyTier, ToolExecutionContext


class FunctionTool:
    """A Python function wrapped as a :class:`~toolcage.runtime.abc.Tool`."""

    __name__: str

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        safety_tier: SafetyTier = SafetyTier.SIDE_EFFECTING,
        timeout: float = 30.0,
        process: bool = False,
        client_side: bool = False,
        concurrency: str | Concurrency | None = None,
    ) -> None:
        self.func = func
        self.safety_tier = safety_tier
        self.timeout = timeout
        self.concurrency = _concurrency(func, concurrency)
        """The declared concurrency mode; ``None``: the tier's default."""
        self.client_side = client_side
        """Whether the host's client runs the calls (they return a pending result)."""
        self._is_async = inspect.iscoroutinefunction(func)
        docstring, param_docs = parse_docstring(inspect.getdoc(func) or "")
        self._context_param, self._model = _arguments_model(func, param_docs)
        self._process = _process_target(func, self._is_async, self._context_param, process)
        self._decl = FunctionDecl(
            name=name or func.__name__,
            description=description or docstring or func.__name__.replace("_", " "),
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
        if self.client_side:
            return ToolResult.pending(ctx.call_id)
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self._context_param is not None:
            kwargs[self._context_param] = ctx
        if self._is_async:
            value = await self.func(**kwargs)
        elif self._process is not None:
            module, qualname = self._process
            value = await call_in_process(self._decl.name, module, qualname, kwargs, self.timeout)
        else:
            value = await run_in_worker(functools.partial(self.func, **kwargs))
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
    process: bool = False,
    client_side: bool = False,
    concurrency: str | Concurrency | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    safety_tier: SafetyTier = SafetyTier.SIDE_EFFECTING,
    timeout: float = 30.0,
    process: bool = False,
    client_side: bool = False,
    concurrency: str | Concurrency | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Declare a Python function as a tool (see the module docstring)."""

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f,
            name=name,
            description=description,
            safety_tier=safety_tier,
            timeout=timeout,
            process=process,
            client_side=client_side,
            concurrency=concurrency,
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
    """The description (the docstring without its parameter section) and each parameter's
    description, from a Google, NumPy or Sphinx style docstring."""
    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:
        return doc.strip(), {}
    parts = [parsed.short_description, parsed.long_description]
    if parsed.returns is not None and parsed.returns.description:
        parts.append(f"Returns: {parsed.returns.description}")
    description = "\n\n".join(p.strip() for p in parts if p and p.strip())
    params = {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}
    return description, params


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
        fields[param.name] = _field(param, annotation, docs.get(param.name))
    model = pydantic.create_model(
        f"{func.__name__}_arguments",
        __config__=pydantic.ConfigDict(extra="forbid"),
        **fields,
    )
    return context_param, model


def _field(param: inspect.Parameter, annotation: Any, doc: str | None) -> tuple[Any, Any]:
    """The parameter's type and field: its default (which may itself be a ``Field``), and
    the docstring's description unless the annotation or that ``Field`` gives one."""
    default = param.default
    field_described = isinstance(default, FieldInfo) and bool(default.description)
    if doc and not field_described and not _described(annotation):
        annotation = typing.Annotated[annotation, pydantic.Field(description=doc)]
    if isinstance(default, FieldInfo):
        return annotation, default
    return annotation, pydantic.Field(... if default is param.empty else default)


def _described(annotation: Any) -> bool:
    """Whether ``Annotated[..., Field(description=...)]`` describes the parameter."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in annotation.__metadata__)


def _concurrency(
    func: Callable[..., Any], declared: str | Concurrency | None
) -> Concurrency | None:
    if declared is None or isinstance(declared, Concurrency):
        return declared
    try:
        return Concurrency.parse(declared)
    except ValueError as exc:
        raise UsageError(f"{func.__name__}: {exc}") from None


def _process_target(
    func: Callable[..., Any], is_async: bool, context_param: str | None, process: bool
) -> tuple[str, str] | None:
    """Where a ``process=True`` tool's worker finds ``func`` (module, qualified name)."""
    if not process:
        return None
    if is_async:
        raise UsageError(f"{func.__name__}: process=True is for synchronous functions")
    if context_param is not None:
        raise UsageError(
            f"{func.__name__}: a tool run in a worker process cannot take the call's context"
        )
    return importable_name(func)


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
