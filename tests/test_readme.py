"""README's examples stay true: the fleet file reference parses and the constructs example synthesizes."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from ecs_gpu_sharing.core import fleet

from conftest import REPO, cdk_json_context

README = (REPO / "README.md").read_text()


def _block(language: str, after: str) -> str:
    section = README[README.index(after) :]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert match, f"no {language} block after {after!r}"
    return match.group(1)


def test_fleet_file_reference_parses() -> None:
    spec = fleet.parse(tomllib.loads(_block("toml", "## The fleet file")), source="README.md")
    assert spec.capacities["l4"].max_instances == 4 and spec.services["embedder"].max_compute_percent == 25
    assert (
        spec.services["embedder"].sidecars[0].name == "metrics"
        and spec.load_balancers["internal"].type == "application"
    )


def test_constructs_example_synthesizes(tmp_path: Path) -> None:
    code = _block("python", "## Using the constructs from another CDK app")
    # The example builds a plain cdk.App(); give it cdk.json's feature flags and a scratch output folder.
    code = code.replace("app = cdk.App()", "app = cdk.App(context=CONTEXT, outdir=OUTDIR)")
    namespace = {"CONTEXT": cdk_json_context(), "OUTDIR": str(tmp_path)}
    exec(compile(code, "README.md", "exec"), namespace)
    assert (tmp_path / "Models.template.json").exists() and (tmp_path / "gpu-fleet-plan.json").exists()


def test_fleet_file_reference_lists_every_key_with_its_default() -> None:
    block = _block("toml", "## The fleet file")
    tables = (
        fleet.TOP,
        fleet.CAPACITY,
        fleet.LOAD_BALANCER,
        fleet.SERVICE,
        fleet.SIDECAR,
        fleet.METRIC,
        fleet.ALLOCATION,
    )
    for key in (k for table in tables for k in table):
        if key.name in ("capacity", "service", "load_balancer") and key.kind is dict:
            continue  # the [capacity.<name>], [service.<name>], [load_balancer.<name>] tables themselves
        if key.table is not None and (f".{key.name}]]" in block or f".{key.name}]" in block):
            continue  # a table of its own: [[service.<name>.sidecar]], [service.<name>.allocation]
        lines = [line for line in block.splitlines() if re.search(rf"(^|[\s{{,#]){key.name} =", line)]
        assert lines, f"README's fleet reference misses {key.name}"
        if key.default is not None:
            shown = str(key.default).lower() if isinstance(key.default, bool) else str(key.default)
            assert any(f"default {shown}" in line or f'default "{shown}"' in line for line in lines), key.name
    for key in fleet.STATEMENT:
        assert f"{key.name} = " in block
