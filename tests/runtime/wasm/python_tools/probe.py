"""A Python tool that exercises each capability of the toolcage:tool world."""

import json

from componentize_py_types import Err
from wit_world.imports import clock, fs, http, log, progress, scratchpad


def run(arguments: dict) -> object:
    op, path = arguments["op"], arguments.get("path", "")
    if op == "read":
        try:
            return bytes(fs.read_file(path, 1000)).decode()
        except Err as err:
            return f"refused: {err.value}"
    if op == "list":
        try:
            return fs.list_dir(path)
        except Err as err:
            return f"refused: {err.value}"
    if op == "now":
        return json.loads(clock.now("Europe/Paris"))
    if op == "report":
        progress.report("half way", 0.5)
        log.write("warning", "the probe reports")
        return "reported"
    if op == "fetch":
        return json.loads(http.request(json.dumps({"method": "GET", "url": path})))
    if op == "note":
        return json.loads(scratchpad.call("write", json.dumps({"items": [path]})))
    if op == "notes":
        return json.loads(scratchpad.call("read", "{}"))
    raise RuntimeError(f"no such op {op!r}")
