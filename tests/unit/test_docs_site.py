"""The documentation site: it builds with --strict (a broken link or anchor fails), its generated
pages say what the code holds, and the code cites those pages, never a brief outside the repository.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from anteroom.config import PREFIX, Settings

ROOT = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("backend", "lua", "frontend", "templates", "tests", "bench", "packages")
# Spelt in two parts so this file does not cite what it forbids.
OUTSIDE_BRIEF = re.compile(r"\b" + "SP" + r"EC\b")


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs_hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built once, with --strict, as CI builds it."""
    out = tmp_path_factory.mktemp("site")
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def test_the_site_builds_strict_with_search(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text())
    pages = {doc["location"].split("#")[0] for doc in index["docs"]}
    for page in ("operators/", "deploying/", "queue/", "management-api/", "benchmarks/"):
        assert page in pages


def test_every_setting_is_in_the_configuration_reference(site: Path) -> None:
    page = (site / "configuration" / "index.html").read_text()
    for f in dataclasses.fields(Settings):
        if f.name != "extra":
            assert f"{PREFIX}{f.name.upper()}" in page


def test_every_setting_has_a_description() -> None:
    rows = _hooks().settings_rows()
    assert len(rows) == len(dataclasses.fields(Settings)) - 1
    assert all(len(meaning) > 10 for _, _, meaning in rows)


def test_a_setting_without_a_description_fails_the_build() -> None:
    hooks = _hooks()

    @dataclasses.dataclass(frozen=True)
    class Undocumented:
        bind: str = dataclasses.field(default="x", metadata={"doc": "Where it listens."})
        newcomer: int = 3

    with pytest.raises(hooks.DocsError, match="ANTEROOM_NEWCOMER"):
        hooks.settings_rows(Undocumented)


def test_every_operation_of_the_openapi_document_is_on_its_page(site: Path) -> None:
    from anteroom.web.api.openapi_document import document

    page = (site / "management-api" / "index.html").read_text()
    operations = [
        op["operationId"]
        for item in document()["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    ]
    assert {"arrive", "joinQueue"} <= set(operations)
    for operation_id in operations:
        assert f'id="{operation_id.lower()}"' in page


def test_every_benchmark_result_is_shown_with_its_command(site: Path) -> None:
    page = (site / "benchmarks" / "index.html").read_text()
    results = sorted((ROOT / "bench" / "results").glob("*.json"))
    assert results
    for path in results:
        assert f"bench/results/{path.name}" in page
    # The engine's poll cost by line length is a series: it gets a chart.
    assert '<svg role="img" aria-label="full_poll_us' in page


def test_a_results_file_without_a_known_command_fails() -> None:
    hooks = _hooks()
    with pytest.raises(hooks.DocsError, match=r"no bench/nowhere\.py"):
        hooks.bench_command(ROOT / "bench" / "results" / "nowhere.json", {})


def test_an_example_shown_otherwise_than_its_file_fails_the_build() -> None:
    hooks = _hooks()
    path = "docs/examples/apps/solve.py"
    whole = (ROOT / path).read_text()
    page = f"<!-- example: {path} -->\n```python\n{{}}```\n"
    hooks.check_examples(page.format(whole))
    with pytest.raises(hooks.DocsError, match=r"solve\.py differs"):
        hooks.check_examples(page.format(whole.replace("hashlib", "hashlib2", 1)))
    with pytest.raises(hooks.DocsError, match="does not exist"):
        hooks.check_examples(page.replace("solve.py", "nowhere.py").format(whole))


def test_the_key_layout_and_the_claims_come_from_the_code(site: Path) -> None:
    page = (site / "queue" / "index.html").read_text()
    assert "anteroom:r:{&lt;room_id&gt;}:room" in page
    for claim in ("qr", "qj", "qi", "nr"):
        assert f"<code>{claim}</code>" in page


def test_no_source_cites_a_brief_outside_the_repository() -> None:
    citing = []
    for folder in SOURCE_DIRS:
        for path in (ROOT / folder).rglob("*"):
            skipped = "node_modules" in path.parts or path.suffix in (".pyc", ".json")
            if skipped or not path.is_file():
                continue
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue
            citing += [
                f"{path.relative_to(ROOT)}:{n}"
                for n, line in enumerate(text.splitlines(), 1)
                if OUTSIDE_BRIEF.search(line)
            ]
    assert citing == []


def test_the_readme_is_short_and_its_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    assert "make test" in readme and "make serve" in readme
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).is_file(), target
