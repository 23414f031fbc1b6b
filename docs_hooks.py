"""MkDocs hooks: the pages whose content the code already holds, generated at build time.

A page asks for a generated part with a marker line, ``<!-- generated: NAME -->``, where NAME is
one of :data:`GENERATORS`: the configuration reference (from ``anteroom.config``), the management
and visitor operations (from the app's OpenAPI document), the Redis key layout
(``anteroom.queue.rooms.key_layout``), the tokens' claims (``anteroom.sdk.tokens``) and the
benchmark
results (``bench/results/*.json``). An unknown marker, a setting without a description or a
results file without a command fails the build, so ``mkdocs build --strict`` keeps them honest.
A page may also show an example file whole (``<!-- example: docs/examples/… -->`` before a fenced
block): the build fails when the copy differs from the file, which the tests run.
"""

from __future__ import annotations

import ast
import dataclasses
import html
import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)


class DocsError(Exception):
    """A generated part cannot be made: the build stops and says why."""


def _cell(text: Any) -> str:
    """A table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(head: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# -- the configuration reference ---------------------------------------------------------------


def settings_rows(settings: type | None = None) -> list[tuple[str, str, str]]:
    """(variable, default, meaning) of every ``ANTEROOM_…`` setting; DocsError if one has none."""
    from anteroom.config import PREFIX, Settings

    rows = []
    for f in dataclasses.fields(settings or Settings):
        if f.name == "extra":  # not an environment variable: from_env never fills it
            continue
        doc = f.metadata.get("doc", "").strip()
        if not doc:
            raise DocsError(f"{PREFIX}{f.name.upper()} has no description in anteroom/config.py")
        default = f.default
        shown = "(empty)" if default == "" else _default_text(default)
        rows.append((PREFIX + f.name.upper(), shown, doc))
    return rows


def _default_text(value: Any) -> str:
    if isinstance(value, bool):
        return "`1`" if value else "`0`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    return f"`{value}`"


def config_reference() -> str:
    rows = [[f"`{name}`", default, doc] for name, default, doc in settings_rows()]
    return _table(["variable", "default", "meaning"], rows)


# -- the OpenAPI document ------------------------------------------------------------------------


def _schema_name(ref: dict[str, Any]) -> str:
    return ref.get("$ref", "").rsplit("/", 1)[-1]


def _type_text(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = _schema_name(schema)
        return f"[{name}](#{name.lower()})"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(_type_text(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return "array of " + _type_text(schema.get("items", {}))
    return str(schema.get("type", "any"))


def _field_name(name: str, schema: dict[str, Any]) -> str:
    """A field's name, marked when it is an older name still taken."""
    return f"`{name}` (older name, still taken)" if schema.get("deprecated") else f"`{name}`"


def _example(schema: dict[str, Any], longest: int = 60) -> str:
    """The field's first example as JSON, cut short in a table cell."""
    examples = schema.get("examples") or []
    if not examples:
        return ""
    text = json.dumps(examples[0], ensure_ascii=False)
    if len(text) > longest:
        text = text[: longest - 1] + "…"
    return f"`{text}`"


def api_operations() -> str:
    """Every operation by tag, then every schema's fields, from the app's OpenAPI document."""
    from anteroom.web.api.openapi_document import document

    doc = document()
    schemas = doc["components"]["schemas"]
    responses = doc["components"]["responses"]
    out = [
        f"Generated from the OpenAPI {doc['openapi']} document the service serves at "
        f"`GET /api/openapi.json` (version {doc['info']['version']}). "
        + doc["info"].get("description", "")
        + "\n"
    ]
    by_tag: dict[str, list[list[Any]]] = {}
    details: list[str] = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method not in ("get", "put", "post", "delete", "patch", "head", "options"):
                continue  # a path's shared parameters
            tag = (op.get("tags") or ["other"])[0]
            op_id = op.get("operationId", "")
            by_tag.setdefault(tag, []).append(
                [f"`{method.upper()} {path}`", f"[`{op_id}`](#{op_id.lower()})", op.get("summary")]
            )
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            codes = []
            for code, answer in op.get("responses", {}).items():
                name = _schema_name(answer)
                text = responses.get(name, answer).get("description", "") if name else ""
                codes.append(f"`{code}` {text}".strip())
            part = [f"### {op_id}\n", f"`{method.upper()} {path}`: {op.get('summary', '')}\n"]
            if op.get("description"):
                part.append(op["description"] + "\n")
            if body.get("schema"):
                part.append("Body: " + _type_text(body["schema"]) + ".\n")
            params = [p for p in op.get("parameters", []) if "name" in p]
            if params:
                part.append(
                    "Parameters:\n\n"
                    + "\n".join(
                        f"- `{p['name']}` ({p.get('in', '')}): {p.get('description', '')}"
                        for p in params
                    )
                    + "\n"
                )
            part.append("Answers: " + "; ".join(codes) + ".\n")
            details.append("\n".join(part))
    for tag in doc.get("tags", []):
        rows = by_tag.pop(tag["name"], [])
        if rows:
            out.append(f"## {tag['name']}\n\n{tag.get('description', '')}\n")
            out.append(_table(["call", "operationId", "what it does"], rows))
    for tag, rows in by_tag.items():
        out.append(f"## {tag}\n\n" + _table(["call", "operationId", "what it does"], rows))
    out.append("## Operations\n")
    out += details
    out.append("## Schemas\n")
    for name, schema in sorted(schemas.items()):
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        out.append(f"### {name}\n")
        if schema.get("description"):
            out.append(schema["description"] + "\n")
        if props:
            rows = [
                [
                    _field_name(p, s),
                    _type_text(s),
                    "yes" if p in required else "",
                    s.get("description", ""),
                    _example(s),
                ]
                for p, s in props.items()
            ]
            out.append(_table(["field", "type", "required", "meaning", "example"], rows))
        elif "enum" in schema:
            out.append("One of " + _type_text(schema) + ".\n")
    return "\n".join(out)


# -- the queue's keys and tokens -----------------------------------------------------------------


def key_layout() -> str:
    """Every key name method of ``KeySpace`` with the first paragraph of its docstring."""
    from anteroom.queue.rooms.key_layout import KeySpace

    layout = KeySpace("anteroom:")
    rows = []
    tree = ast.parse(inspect.getsource(KeySpace))
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        params = [a.arg for a in node.args.args[1:]]
        # Names the key checks accept, shown as <placeholders> after.
        made = getattr(layout, node.name)(*[0 if p == "minute" else p.upper() for p in params])
        example = "room base + " + ", ".join(made) if isinstance(made, dict) else str(made)
        for p in params:
            shown, placeholder = (":0", ":<minute>") if p == "minute" else (p.upper(), f"<{p}>")
            example = example.replace(shown, placeholder)
        text = (ast.get_docstring(node) or "").split("\n\n")[0].replace("``", "`")
        rows.append([f"`{node.name}`", f"`{example}`", text])
    return (
        _table(["name", "key (prefix `anteroom:`)", "what it holds"], rows)
        + "\n"
        + (inspect.getdoc(KeySpace.room_keys) or "").replace("``", "`")
    )


def token_claims() -> str:
    """Each token type's claims, with the comment beside each field in ``anteroom.sdk.tokens``."""
    from anteroom.sdk import tokens

    out = []
    kinds = (tokens.ChallengeClaims, tokens.SessionClaims, tokens.TicketClaims,
             tokens.AdmissionClaims, tokens.InviteClaims)  # fmt: skip
    for cls in kinds:
        notes = {}
        for line in inspect.getsource(cls).splitlines():
            m = re.match(r"\s+(\w+):.*?#\s*(.+)$", line)
            if m:
                notes[m.group(1)] = m.group(2)
        rows = []
        for f in dataclasses.fields(cls):
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            note = notes.get(f.name, f.name.replace("_", " "))
            rows.append([f"`{f.metadata['wire']}`", f.name, "yes" if required else "", note])
        title = (inspect.getdoc(cls) or cls.__name__).split("\n")[0].replace("``", "`")
        out.append(f"### {cls.__name__}\n\n{title}\n\n")
        out.append(_table(["claim", "field", "always", "meaning"], rows))
    return "\n".join(out)


# -- benchmarks ------------------------------------------------------------------------------------

# Results files not named after the script that wrote them, and how they were made.
BENCH_COMMANDS = {
    "public_docs_polite.json": "python bench/public_docs.py --polite "
    "--out bench/results/public_docs_polite.json",
    "arrivals.json": "python bench/arrivals.py --also-before 8d121bc --servers granian "
    "--steps 50,100,200 --seconds 20",
    "servers.json": "python bench/servers.py --rounds 2 --seconds 8 --before 8d121bc",
    "drain_cursor.json": "python bench/drain_cursor.py --rounds 15",
    "drain_cursor_2000.json": "python bench/drain_cursor.py --rounds 8 --line 2000 "
    "--out bench/results/drain_cursor_2000.json",
}
# Files bench/modes.py wrote (before/after the lua/ of a revision): its flags are in the file.
MODES_FILES = ("invites", "invites_aa", "random_modes", "rules_fifo", "safety_net")


def bench_command(path: Path, data: Any) -> str:
    """The command that wrote ``path``; DocsError when no script in bench/ is known to."""
    if path.name in BENCH_COMMANDS:
        return BENCH_COMMANDS[path.name]
    if path.stem in MODES_FILES:
        flags = f"--before {data['before']} --rounds {data['rounds']} --batch {data['batch']}"
        return f"python bench/modes.py {flags} --out bench/results/{path.name}"
    script = ROOT / "bench" / f"{path.stem}.py"
    if not script.exists():
        raise DocsError(f"bench/results/{path.name}: no bench/{path.stem}.py; name its command")
    return f"python bench/{path.stem}.py"


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        rows: list[tuple[str, Any]] = []
        for k, v in value.items():
            rows += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return rows
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        rows = []
        for i, v in enumerate(value):
            rows += _flatten(v, f"{prefix}[{i}]")
        return rows
    return [(prefix, value)]


def _series(value: Any, prefix: str = "") -> list[tuple[str, list[tuple[str, float]]]]:
    """Series worth a chart: a list of numbers, or a mapping whose keys are all numbers."""
    found: list[tuple[str, list[tuple[str, float]]]] = []
    if isinstance(value, dict):
        numeric = [isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()]
        if len(value) >= 3 and all(numeric) and all(re.fullmatch(r"[\d.]+", k) for k in value):
            found.append((prefix, [(k, float(v)) for k, v in value.items()]))
        else:
            for k, v in value.items():
                found += _series(v, f"{prefix}.{k}" if prefix else str(k))
    elif (
        isinstance(value, list)
        and len(value) >= 3
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        found.append((prefix, [(str(i + 1), float(v)) for i, v in enumerate(value)]))
    return found


def bar_chart(title: str, points: list[tuple[str, float]]) -> str:
    """A small inline SVG bar chart (no script, no external file), labelled for screen readers."""
    width, height, pad = 40 * len(points) + 40, 160, 24
    top = max((v for _, v in points), default=0) or 1
    bars = []
    for i, (label, v) in enumerate(points):
        h = (height - 2 * pad) * v / top
        x = 30 + i * 40
        y = height - pad - h
        bars.append(
            f'<rect x="{x}" y="{y:.1f}" width="28" height="{h:.1f}" fill="currentColor" '
            f'opacity="0.6"><title>{html.escape(label)}: {v:g}</title></rect>'
            f'<text x="{x + 14}" y="{height - 8}" font-size="10" text-anchor="middle">'
            f"{html.escape(label)}</text>"
            f'<text x="{x + 14}" y="{y - 3:.1f}" font-size="9" text-anchor="middle">{v:g}</text>'
        )
    label = html.escape(f"{title}: " + ", ".join(f"{k} {v:g}" for k, v in points))
    return (
        f'<figure><svg role="img" aria-label="{label}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}">{"".join(bars)}</svg>'
        f"<figcaption><code>{html.escape(title)}</code></figcaption></figure>\n"
    )


def _value_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(json.dumps(v) if not isinstance(v, str) else v for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value)


def benchmarks() -> str:
    """Each bench/results/*.json: the command, its figures as a table, a chart per series."""
    out = []
    for path in sorted((ROOT / "bench" / "results").glob("*.json")):
        data = json.loads(path.read_text())
        out.append(f"## {path.stem}\n")
        command = bench_command(path, data)
        out.append(f"`bench/results/{path.name}`, written by:\n\n```sh\n{command}\n```\n")
        script = ROOT / command.split()[1]
        purpose = (ast.get_docstring(ast.parse(script.read_text())) or "").split("\n\n")[0]
        if purpose:
            out.append(f"What `{script.relative_to(ROOT)}` measures: {purpose}\n")
        rows = [[f"`{k}`", _value_text(v)] for k, v in _flatten(data)]
        out.append(_table(["figure", "value"], rows))
        for title, points in _series(data)[:6]:
            out.append(bar_chart(title, points))
    return "\n".join(out)


GENERATORS: dict[str, Callable[[], str]] = {
    "config": config_reference,
    "api": api_operations,
    "keys": key_layout,
    "claims": token_claims,
    "benchmarks": benchmarks,
}


def render(markdown: str) -> str:
    """``markdown`` with each marker replaced by its generated part."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise DocsError(f"unknown generated part {name!r}")
        return GENERATORS[name]()

    return MARKER.sub(one, markdown)


# -- examples shown whole -----------------------------------------------------------------------

# A page shows an example file whole, readable on GitHub too, as a fenced block right after
# ``<!-- example: docs/examples/… -->``; the build fails when the block and the file differ, and
# tests/integration/test_apps_guide.py runs the files.
EXAMPLE = re.compile(r"^<!-- example: (\S+) -->\n```[a-z]*\n(.*?)^```$", re.M | re.S)


def shown_examples(markdown: str) -> dict[str, str]:
    """Each example file a page shows, by path, with the text it shows."""
    return {match.group(1): match.group(2) for match in EXAMPLE.finditer(markdown)}


def check_examples(markdown: str) -> None:
    """DocsError if a shown example differs from its file (or the file is missing)."""
    for path, shown in shown_examples(markdown).items():
        file = ROOT / path
        if not file.is_file():
            raise DocsError(f"the example {path} a page shows does not exist")
        if file.read_text() != shown:
            raise DocsError(f"the page's copy of {path} differs from the file: copy it again")


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: fill in the generated parts of a page, check the examples it shows."""
    check_examples(markdown)
    return render(markdown)
