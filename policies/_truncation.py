"""The one wording of the note that stands where output was cut.

Every bound on output leaves the same note: the pipeline's byte limit on a result, a
guest's stdout cap, the shell sidecar's head-and-tail keeper of a command and its ring of a
background job's latest output. A model reads one form::

    [output truncated — original size: 142,857 bytes]
    [shown: the first 65,536 bytes]
    [full output: call tool_output_read with handle "out_5f1c9a2e4b7d" to read more]

The first line is always there. The second says which part of the output the text around
the note is, where the cutter knows it; the third how to read the full output, where it was
kept under a handle.

Only the note the pipeline writes itself reaches a model in this form. A note written by a
cutter inside a tool (the shell sidecar, a guest's output cap) is part of that tool's text,
which the pipeline escapes wherever a line could pass for one of its own: the model reads
it as ``\\[output truncated — ...]`` (``toolcage.runtime._markers``).

It lives in ``toolcage.policies`` because that is the package both the runtime and the
shell sidecar (another process, which imports only its protocol module and the policies)
import; it is plain text, no I/O.
"""

from __future__ import annotations


def truncation_marker(
    original_size: int,
    *,
    first: int | None = None,
    last: int | None = None,
    handle: str | None = None,
) -> str:
    """The note for output of ``original_size`` bytes that was cut (no surrounding newlines).

    ``first`` and ``last`` are the bytes of its start and its end that are shown beside the
    note; ``handle`` is where the full output is kept for ``tool_output_read``.
    """
    lines = [f"[output truncated — original size: {original_size:,} bytes]"]
    parts = []
    if first is not None:
        parts.append(f"the first {first:,}")
    if last is not None:
        parts.append(f"the last {last:,}")
    if parts:
        lines.append(f"[shown: {' and '.join(parts)} bytes]")
    if handle is not None:
        lines.append(f'[full output: call tool_output_read with handle "{handle}" to read more]')
    return "\n".join(lines)
