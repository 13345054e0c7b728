"""Typical model-written snippets with the exact result CPython 3.14 gives for each.

Plain data, so that any host can replay it: put :attr:`Snippet.files` into an empty,
writable workspace, run :attr:`Snippet.code` there, and compare stdout, stderr, the final
expression's repr (:attr:`Snippet.value`) and the traceback (:attr:`Snippet.error`).
The snippets avoid what varies from run to run (the order of sets of strings, ``random``),
and their stdout was checked against a native CPython 3.11 as well, where it agrees with
3.14 (``OrderedDict``'s repr and ``itertools.batched`` are 3.12's). One difference from a
native CPython is by design: the standard library's sources are not in the component, so
its frames in a traceback show no source line.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Snippet:
    """One snippet and what running it gives."""

    name: str
    code: str
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    """The repr of the final expression, when the code ends with one that is not None."""
    error: str | None = None
    """The traceback text, when the code raises."""
    files: dict[str, str] = field(default_factory=dict)
    """Files in the workspace before the run, by relative path."""


SALES = """region,product,units,price
north,widget,12,2.50
south,widget,7,2.50
north,gadget,3,10.00
east,widget,20,2.25
south,gadget,5,9.50
east,gizmo,1,99.99
"""

SNIPPETS: tuple[Snippet, ...] = (
    Snippet("print", "print(1)", "1\n"),
    Snippet(
        "csv_json_statistics_datetime",
        """\
import csv, io, json, statistics, datetime
rows = list(csv.DictReader(io.StringIO("name,score\\na,3\\nb,5\\nc,10\\n")))
s = [int(r["score"]) for r in rows]
print(json.dumps({"mean": statistics.mean(s), "stdev": round(statistics.stdev(s), 3),
                  "median": statistics.median(s), "d": datetime.date(2024, 1, 1).isoformat()}))
""",
        '{"mean": 6, "stdev": 3.606, "median": 5, "d": "2024-01-01"}\n',
    ),
    Snippet(
        "json_pretty",
        """\
import json
data = json.loads('{"users": [{"name": "Ana", "age": 31}, {"name": "Bo", "age": 25}]}')
data["users"].sort(key=lambda u: u["age"])
print(json.dumps(data, indent=2, sort_keys=True))
print(sum(u["age"] for u in data["users"]) / len(data["users"]))
""",
        """\
{
  "users": [
    {
      "age": 25,
      "name": "Bo"
    },
    {
      "age": 31,
      "name": "Ana"
    }
  ]
}
28.0
""",
    ),
    Snippet(
        "datetime_arithmetic",
        """\
from datetime import date, datetime, timedelta
start = date(2024, 2, 27)
for i in range(4):
    d = start + timedelta(days=i)
    print(d.isoformat(), d.strftime("%a %d %b"), d.weekday())
t = datetime(2024, 3, 1, 9, 30) - datetime(2024, 2, 28, 17, 45)
print(t, t.total_seconds() / 3600)
print(datetime.fromisoformat("2024-05-17T08:15:00").strftime("%Y/%m/%d %H:%M"))
""",
        """\
2024-02-27 Tue 27 Feb 1
2024-02-28 Wed 28 Feb 2
2024-02-29 Thu 29 Feb 3
2024-03-01 Fri 01 Mar 4
1 day, 15:45:00 39.75
2024/05/17 08:15
""",
    ),
    Snippet(
        "regular_expressions",
        """\
import re
text = "Contact ana@example.com or bo.smith@test.org; call 555-1234 or 555-9876."
print(re.findall(r"[\\w.]+@[\\w.]+\\.\\w+", text))
print(re.sub(r"(\\d{3})-(\\d{4})", r"\\2-\\1", text))
m = re.search(r"(?P<user>[\\w.]+)@(?P<domain>[\\w.]+)", text)
print(m.group("user"), m.group("domain"), m.span())
print(re.split(r"[;,.]\\s*", "a, b;c. d"))
""",
        """\
['ana@example.com', 'bo.smith@test.org']
Contact ana@example.com or bo.smith@test.org; call 1234-555 or 9876-555.
ana example.com (8, 23)
['a', 'b', 'c', 'd']
""",
    ),
    Snippet(
        "collections",
        """\
from collections import Counter, defaultdict, deque, namedtuple, OrderedDict
words = "the cat and the dog and the bird".split()
print(Counter(words).most_common(2))
by_len = defaultdict(list)
for w in words:
    by_len[len(w)].append(w)
print(dict(by_len))
Point = namedtuple("Point", "x y")
p = Point(3, 4)
print(p, p._replace(y=0), p.x * p.y)
q = deque(range(5), maxlen=3)
q.appendleft(9)
print(q)
print(OrderedDict(sorted({"b": 2, "a": 1}.items())))
""",
        """\
[('the', 3), ('and', 2)]
{3: ['the', 'cat', 'and', 'the', 'dog', 'and', 'the'], 4: ['bird']}
Point(x=3, y=4) Point(x=3, y=0) 12
deque([9, 2, 3], maxlen=3)
OrderedDict({'a': 1, 'b': 2})
""",
    ),
    Snippet(
        "itertools",
        """\
import itertools, operator
data = [("a", 1), ("a", 2), ("b", 3), ("c", 4), ("c", 5)]
for key, group in itertools.groupby(data, key=operator.itemgetter(0)):
    print(key, [v for _, v in group])
print(list(itertools.combinations("abc", 2)))
print(list(itertools.accumulate([1, 2, 3, 4])))
print(list(itertools.islice(itertools.count(10, 5), 3)))
print(list(itertools.chain([1], (2, 3))), list(itertools.product([0, 1], repeat=2)))
print(list(itertools.batched(range(7), 3)))
""",
        """\
a [1, 2]
b [3]
c [4, 5]
[('a', 'b'), ('a', 'c'), ('b', 'c')]
[1, 3, 6, 10]
[10, 15, 20]
[1, 2, 3] [(0, 0), (0, 1), (1, 0), (1, 1)]
[(0, 1, 2), (3, 4, 5), (6,)]
""",
    ),
    Snippet(
        "decimal_money",
        """\
from decimal import Decimal, ROUND_HALF_UP
prices = [Decimal("19.99"), Decimal("5.01"), Decimal("0.10")]
total = sum(prices)
tax = (total * Decimal("0.075")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
print(total, tax, total + tax)
print(Decimal(1) / Decimal(7))
print(0.1 + 0.2, Decimal("0.1") + Decimal("0.2"))
""",
        "25.10 1.88 26.98\n0.1428571428571428571428571429\n0.30000000000000004 0.3\n",
    ),
    Snippet(
        "fractions_and_math",
        """\
from fractions import Fraction
import math
f = Fraction(1, 3) + Fraction(1, 6)
print(f, f * 4, float(f), Fraction("0.75"))
print(math.sqrt(2), math.isclose(0.1 + 0.2, 0.3), math.gcd(84, 36), math.comb(5, 2))
print(round(2.675, 2), round(2.5), divmod(17, 5), 7 // -2, -7 % 3)
print(hex(255), bin(10), int("ff", 16), f"{1234567.891:,.2f}")
""",
        """\
1/2 2 0.5 3/4
1.4142135623730951 True 12 10
2.67 2 (3, 2) -4 2
0xff 0b1010 255 1,234,567.89
""",
    ),
    Snippet(
        "string_formatting",
        """\
name, score, ratio = "Ana", 93.456, 0.4567
print(f"{name:>6}|{score:8.1f}|{ratio:.1%}|{42:05d}|{'x':*^7}")
print("{} has {:d} items".format("cart", 3), "%s=%.2f" % ("pi", 3.14159))
s = "  Hello, World  "
print(repr(s.strip()), s.lower().split(","), "-".join(["a", "b", "c"]))
print("snake_case_name".title().replace("_", ""), "abc".upper().center(9, "."))
print(f"{'left':<8}|{'right':>8}|")
""",
        """\
   Ana|    93.5|45.7%|00042|***x***
cart has 3 items pi=3.14
'Hello, World' ['  hello', ' world  '] a-b-c
SnakeCaseName ...ABC...
left    |   right|
""",
    ),
    Snippet(
        "text_table",
        """\
rows = [("apple", 3, 1.5), ("banana", 12, 0.25), ("cherry", 100, 10.0)]
print(f"{'fruit':<10}{'qty':>5}{'cost':>8}")
for fruit, qty, price in rows:
    print(f"{fruit:<10}{qty:>5}{qty * price:>8.2f}")
print("-" * 23)
print(f"{'total':<10}{sum(q for _, q, _ in rows):>5}{sum(q * p for _, q, p in rows):>8.2f}")
""",
        """\
fruit       qty    cost
apple         3    4.50
banana       12    3.00
cherry      100 1000.00
-----------------------
total       115 1007.50
""",
    ),
    Snippet(
        "classes",
        """\
class Account:
    rate = 0.02

    def __init__(self, owner, balance=0):
        self.owner = owner
        self._balance = balance

    @property
    def balance(self):
        return self._balance

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("amount must be positive")
        self._balance += amount
        return self

    @classmethod
    def empty(cls, owner):
        return cls(owner)

    def __repr__(self):
        return f"{type(self).__name__}({self.owner!r}, {self._balance})"


class Savings(Account):
    rate = 0.05

    def interest(self):
        return round(self.balance * self.rate, 2)


s = Savings("ana", 100).deposit(50)
print(s, s.balance, s.interest(), Account.empty("bo"))
try:
    s.deposit(-1)
except ValueError as e:
    print("error:", e)
print(isinstance(s, Account), Savings.__mro__[1].__name__)
""",
        """\
Savings('ana', 150) 150 7.5 Account('bo', 0)
error: amount must be positive
True Account
""",
    ),
    Snippet(
        "dataclasses",
        """\
from dataclasses import dataclass, field, asdict
from typing import List

@dataclass(order=True)
class Task:
    priority: int
    title: str = field(compare=False)
    tags: List[str] = field(default_factory=list, compare=False)

tasks = [Task(3, "write"), Task(1, "plan", ["urgent"]), Task(2, "review")]
for t in sorted(tasks):
    print(t)
print(asdict(tasks[1]))
print(Task(1, "a") == Task(1, "b"), Task(1, "a") < Task(2, "a"))
""",
        """\
Task(priority=1, title='plan', tags=['urgent'])
Task(priority=2, title='review', tags=[])
Task(priority=3, title='write', tags=[])
{'priority': 1, 'title': 'plan', 'tags': ['urgent']}
True True
""",
    ),
    Snippet(
        "generators",
        """\
def fib():
    a, b = 0, 1
    while True:
        yield a
        a, b = b, a + b

def take(n, it):
    for _, x in zip(range(n), it):
        yield x

def chunks(xs, size):
    for i in range(0, len(xs), size):
        yield xs[i:i + size]

def flatten(nested):
    for x in nested:
        if isinstance(x, list):
            yield from flatten(x)
        else:
            yield x

print(list(take(10, fib())))
print(list(chunks(list(range(7)), 3)))
print(list(flatten([1, [2, [3, 4]], 5])))
print(sum(x * x for x in range(10) if x % 2))
""",
        """\
[0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
[[0, 1, 2], [3, 4, 5], [6]]
[1, 2, 3, 4, 5]
165
""",
    ),
    Snippet(
        "comprehensions",
        """\
words = ["apple", "Banana", "cherry", "date", "Elder"]
print({w.lower(): len(w) for w in words if len(w) > 4})
print(sorted({len(w) for w in words}))
print([[i * j for j in range(1, 4)] for i in range(1, 4)])
print([(i, w) for i, w in enumerate(words, 1) if w[0].isupper()])
print(dict(zip("abc", range(3))), list(map(str.upper, words[:2])))
matrix = [[1, 2, 3], [4, 5, 6]]
print([list(col) for col in zip(*matrix)])
""",
        """\
{'apple': 5, 'banana': 6, 'cherry': 6, 'elder': 5}
[4, 5, 6]
[[1, 2, 3], [2, 4, 6], [3, 6, 9]]
[(2, 'Banana'), (5, 'Elder')]
{'a': 0, 'b': 1, 'c': 2} ['APPLE', 'BANANA']
[[1, 4], [2, 5], [3, 6]]
""",
    ),
    Snippet(
        "file_write_then_read",
        """\
import os
from pathlib import Path
with open("notes.txt", "w") as f:
    for i in range(3):
        f.write(f"line {i}\\n")
with open("notes.txt", "a") as f:
    print("appended", file=f)
print(open("notes.txt").read(), end="")
p = Path("out") / "data.txt"
p.parent.mkdir(exist_ok=True)
p.write_text("héllo\\n", encoding="utf-8")
print(p.read_text(encoding="utf-8").strip(), p.stat().st_size, sorted(os.listdir(".")))
print(len(Path("notes.txt").read_text().splitlines()), Path("notes.txt").exists())
""",
        """\
line 0
line 1
line 2
appended
héllo 7 ['notes.txt', 'out']
4 True
""",
    ),
    Snippet(
        "workspace_csv_report",
        """\
import csv, json
from collections import defaultdict
totals = defaultdict(float)
units = defaultdict(int)
with open("sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += int(row["units"]) * float(row["price"])
        units[row["region"]] += int(row["units"])
report = {r: {"units": units[r], "revenue": round(totals[r], 2)} for r in sorted(totals)}
with open("report.json", "w") as f:
    json.dump(report, f, indent=1)
with open("report.json") as f:
    print(f.read())
best = max(report, key=lambda r: report[r]["revenue"])
print(f"best region: {best} ({report[best]['revenue']:.2f})")
""",
        """\
{
 "east": {
  "units": 21,
  "revenue": 144.99
 },
 "north": {
  "units": 15,
  "revenue": 60.0
 },
 "south": {
  "units": 12,
  "revenue": 65.0
 }
}
best region: east (144.99)
""",
        files={"sales.csv": SALES},
    ),
    Snippet(
        "asyncio_gather",
        """\
import asyncio

async def fetch(name, delay):
    await asyncio.sleep(delay)
    return f"{name} done after {delay}"

async def main():
    results = await asyncio.gather(fetch("a", 0.03), fetch("b", 0.01), fetch("c", 0.02))
    for r in results:
        print(r)
    done = []
    async def worker(i):
        await asyncio.sleep(0.01 * (3 - i))
        done.append(i)
    await asyncio.gather(*(worker(i) for i in range(3)))
    print("finished in order", done)
    try:
        await asyncio.wait_for(asyncio.sleep(1), timeout=0.01)
    except TimeoutError:
        print("timed out")
    return len(results)

print(asyncio.run(main()))
""",
        """\
a done after 0.03
b done after 0.01
c done after 0.02
finished in order [2, 1, 0]
timed out
3
""",
    ),
    Snippet(
        "zoneinfo_conversions",
        """\
from datetime import datetime, timezone
from zoneinfo import ZoneInfo
meeting = datetime(2024, 3, 8, 15, 0, tzinfo=timezone.utc)
for zone in ["America/New_York", "Europe/Paris", "Asia/Tokyo", "Australia/Sydney"]:
    local = meeting.astimezone(ZoneInfo(zone))
    print(f"{zone:<17} {local:%Y-%m-%d %H:%M} {local.tzname()} {local.utcoffset()}")
summer = datetime(2024, 7, 1, 12, tzinfo=ZoneInfo("America/New_York"))
print(summer.isoformat(), summer.astimezone(timezone.utc).isoformat())
""",
        """\
America/New_York  2024-03-08 10:00 EST -1 day, 19:00:00
Europe/Paris      2024-03-08 16:00 CET 1:00:00
Asia/Tokyo        2024-03-09 00:00 JST 9:00:00
Australia/Sydney  2024-03-09 02:00 AEDT 11:00:00
2024-07-01T12:00:00-04:00 2024-07-01T16:00:00+00:00
""",
    ),
    Snippet(
        "sorting_with_keys",
        """\
from operator import itemgetter, attrgetter
people = [
    {"name": "ana", "age": 31, "city": "Lima"},
    {"name": "bo", "age": 25, "city": "Oslo"},
    {"name": "cy", "age": 31, "city": "Baku"},
    {"name": "di", "age": 25, "city": "Lima"},
]
print([p["name"] for p in sorted(people, key=itemgetter("age", "city"))])
print([p["name"] for p in sorted(people, key=lambda p: (-p["age"], p["name"]))])
print(sorted(["banana", "Apple", "cherry"], key=str.lower))
print(sorted(["bb", "a", "ccc", "dd"], key=len, reverse=True))
print(max(people, key=itemgetter("age"))["name"], min("hello world".split(), key=len))
print(sorted([3, 1, 2], reverse=True), sorted("zyx"))
""",
        """\
['di', 'bo', 'cy', 'ana']
['ana', 'cy', 'bo', 'di']
['Apple', 'banana', 'cherry']
['ccc', 'bb', 'dd', 'a']
ana hello
[3, 2, 1] ['x', 'y', 'z']
""",
    ),
    Snippet(
        "final_expression",
        """\
data = {"a": [1, 2, 3], "b": "text"}
data["total"] = sum(data["a"])
data
""",
        value="{'a': [1, 2, 3], 'b': 'text', 'total': 6}",
    ),
    Snippet(
        "final_expression_after_output",
        "import statistics\nxs = [2, 4, 4, 4, 5, 5, 7, 9]\nprint(len(xs))\nstatistics.pstdev(xs)\n",
        "8\n",
        value="2.0",
    ),
    Snippet("final_call_returning_none", "print('only output')", "only output\n"),
    Snippet(
        "main_guard",
        """\
def main():
    print("running as", __name__)

if __name__ == "__main__":
    main()
""",
        "running as __main__\n",
    ),
    Snippet(
        "stderr_and_handled_exception",
        """\
import sys, logging
logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(message)s")
print("to stdout")
print("to stderr", file=sys.stderr)
try:
    {}["missing"]
except KeyError as e:
    logging.warning("missing key %s", e)
logging.info("done")
""",
        "to stdout\n",
        "to stderr\nWARNING:missing key 'missing'\nINFO:done\n",
    ),
    Snippet(
        "sqlite_in_memory",
        """\
import sqlite3
db = sqlite3.connect(":memory:")
db.execute("create table t (name text, qty int)")
db.executemany("insert into t values (?, ?)", [("a", 3), ("b", 5), ("a", 4)])
for row in db.execute("select name, sum(qty) from t group by name order by name"):
    print(row)
print(db.execute("select count(*) from t").fetchone()[0])
""",
        "('a', 7)\n('b', 5)\n3\n",
    ),
    Snippet(
        "hashes_and_encodings",
        """\
import hashlib, base64, uuid, textwrap, string
print(hashlib.sha256(b"hello").hexdigest()[:16], hashlib.md5(b"hello").hexdigest()[:8])
print(base64.b64encode("héllo".encode()).decode(), base64.b64decode("aGk=").decode())
print(uuid.UUID("12345678123456781234567812345678"))
print(textwrap.fill("The quick brown fox jumps over the lazy dog.", width=16))
print(string.Template("$who likes $what").substitute(who="Ana", what="tea"))
""",
        """\
2cf24dba5fb0a30e 5d41402a
aMOpbGxv hi
12345678-1234-5678-1234-567812345678
The quick brown
fox jumps over
the lazy dog.
Ana likes tea
""",
    ),
    Snippet(
        "exception_traceback",
        """\
def average(values):
    return sum(values) / len(values)

def report(groups):
    for name, values in groups.items():
        print(name, average(values))

report({"a": [1, 2, 3], "b": []})
""",
        "a 2.0\n",
        error="""\
Traceback (most recent call last):
  File "<code>", line 8, in <module>
    report({"a": [1, 2, 3], "b": []})
    ~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "<code>", line 6, in report
    print(name, average(values))
                ~~~~~~~^^^^^^^^
  File "<code>", line 2, in average
    return sum(values) / len(values)
           ~~~~~~~~~~~~^~~~~~~~~~~~~
ZeroDivisionError: division by zero
""",
    ),
    Snippet(
        "exception_from_the_standard_library",
        # the standard library's sources are not in the component: its frames show no line
        "import json\nconfig = json.loads('{\"retries\": 3,}')\n",
        error="""\
Traceback (most recent call last):
  File "<code>", line 2, in <module>
    config = json.loads('{"retries": 3,}')
  File "/python/json/__init__.py", line 346, in loads
  File "/python/json/decoder.py", line 345, in decode
  File "/python/json/decoder.py", line 361, in raw_decode
json.decoder.JSONDecodeError: Illegal trailing comma before end of object: """
        "line 1 column 14 (char 13)\n",
    ),
    Snippet(
        "syntax_error",
        "total = 0\nfor x in range(3)\n    total += x\n",
        error="""\
  File "<code>", line 2
    for x in range(3)
                     ^
SyntaxError: expected ':'
""",
    ),
)
