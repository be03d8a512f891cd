"""Every example in README and docs/ runs, and what it prints is what the page shows.

A page's Python blocks run in order as one program (a later block may use what an earlier one built), each
``cdk.App()`` given cdk.json's feature flags and a scratch output folder. A ``text`` block marked
``<!-- printed by the example above -->`` must appear, line by line, in what the Python block before it printed; one
marked ``<!-- output of: ecs-gpu-sharing ARGS -->`` in what the CLI prints for ARGS, run beside the page's last TOML
block written under the file name ARGS names. A Python block marked ``<!-- runs as PATH -->`` is the file PATH, which
its own test runs. Every TOML block parses; one that starts a fleet (``name =``) parses as a fleet file.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import fleet

from conftest import REPO, cdk_json_context

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"(?:^<!-- (?P<mark>.*?) -->\n)?^ *```(?P<lang>\w+)\n(?P<body>.*?)^ *```\n", re.S | re.M)


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    mark: str


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        body = m["body"]
        indent = min((len(line) - len(line.lstrip()) for line in body.splitlines() if line.strip()), default=0)
        body = "\n".join(line[indent:] for line in body.splitlines()) + "\n"
        out.append(Block(m["lang"], body, m["mark"] or ""))
    return out


def _shown(block: Block) -> list[str]:
    return [line.rstrip() for line in block.body.splitlines() if line.strip()]


def _printed_lines(text: str) -> set[str]:
    return {line.rstrip() for line in text.splitlines()}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_python_example_runs_and_prints_what_the_page_shows(page: Path, tmp_path: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}  # each page's blocks import what they use
    printed = ""
    for i, block in enumerate(blocks(page)):
        if block.lang == "python" and block.mark.startswith("runs as "):
            source = (REPO / block.mark.removeprefix("runs as ").strip()).read_text(encoding="utf-8")
            body = block.body.strip()
            # The whole block, imports included: copied into a file, it must run as shown.
            assert body in source, f"{page.name}: the example is not {block.mark}, imports included"
        elif block.lang == "python":
            outdir = tmp_path / f"out{i}"
            code = block.body.replace("cdk.App()", f"cdk.App(context=CONTEXT, outdir={str(outdir)!r})")
            namespace["CONTEXT"] = cdk_json_context()
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                exec(compile(code, f"{page.name}, block {i}", "exec"), namespace)
            printed = out.getvalue()
        elif block.lang == "text" and block.mark == "printed by the example above":
            missing = [line for line in _shown(block) if line not in _printed_lines(printed)]
            assert missing == [], f"{page.name} shows lines the example does not print:\n{printed}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_cli_output_shown_is_what_the_cli_prints(
    page: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    last_toml = None
    for block in blocks(page):
        if block.lang == "toml":
            last_toml = block.body
        elif block.lang == "text" and block.mark.startswith("output of: ecs-gpu-sharing "):
            args = shlex.split(block.mark.removeprefix("output of: ecs-gpu-sharing "))
            assert last_toml is not None, f"{page.name}: no fleet file before {block.mark}"
            for arg in args:
                if arg.endswith(".toml"):
                    (tmp_path / arg).write_text(last_toml)
            monkeypatch.chdir(tmp_path)
            main(args)
            printed = capsys.readouterr()
            missing = [line for line in _shown(block) if line not in _printed_lines(printed.out + printed.err)]
            assert missing == [], f"{page.name} shows lines `{block.mark}` does not print:\n{printed.out}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_toml_example_parses(page: Path) -> None:
    for block in blocks(page):
        if block.lang != "toml":
            continue
        doc = tomllib.loads(block.body)
        if "name" in doc:
            fleet.parse(doc, source=page.name)


def test_the_runner_finds_the_examples_it_checks() -> None:
    readme = blocks(REPO / "README.md")
    assert [b.lang for b in readme].count("python") == 1 and any(b.mark.startswith("output of:") for b in readme)
    constructs = blocks(REPO / "docs" / "constructs.md")
    assert sum(1 for b in constructs if b.mark == "printed by the example above") == 2


def test_a_wrong_output_shown_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nprint('4 instances')\n```\n\n<!-- printed by the example above -->\n```text\n5 instances\n```\n"
    )
    with pytest.raises(AssertionError, match="shows lines the example does not print"):
        test_every_python_example_runs_and_prints_what_the_page_shows(page, tmp_path)


def test_readme_is_the_front_page() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 250
    assert "make synth" in "\n".join(lines[:25]) and "make test" in "\n".join(lines[:25])


def test_the_annotated_fleet_file_uses_every_key_with_its_default() -> None:
    (block,) = [b for b in blocks(REPO / "docs" / "fleet-example.md") if b.lang == "toml"]
    spec = fleet.parse(tomllib.loads(block.body), source="fleet-example.md")
    assert spec.capacities["l4"].max_instances == 4 and spec.services["embedder"].max_compute_percent == 25
    tables = (fleet.TOP, fleet.CAPACITY, fleet.LOAD_BALANCER, fleet.SERVICE, fleet.SIDECAR, fleet.METRIC)
    for key in (k for table in (*tables, fleet.ALLOCATION) for k in table):
        if key.name in ("capacity", "service", "load_balancer") and key.value_type is dict:
            continue  # the [capacity.<name>], [service.<name>], [load_balancer.<name>] tables themselves
        if key.table is not None and (f".{key.name}]]" in block.body or f".{key.name}]" in block.body):
            continue  # a table of its own: [[service.<name>.sidecar]], [service.<name>.allocation]
        lines = [line for line in block.body.splitlines() if re.search(rf"(^|[\s{{,#]){key.name} =", line)]
        assert lines, f"the annotated fleet file misses {key.name}"
        if key.default is not None:
            shown = str(key.default).lower() if isinstance(key.default, bool) else str(key.default)
            assert any(f"default {shown}" in line or f'default "{shown}"' in line for line in lines), key.name
    for key in fleet.STATEMENT:
        assert f"{key.name} = " in block.body
