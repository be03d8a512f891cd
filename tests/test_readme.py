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


def test_constructs_example_synthesizes(tmp_path: Path) -> None:
    code = _block("python", "## Using the constructs from another CDK app")
    # The example builds a plain cdk.App(); give it cdk.json's feature flags and a scratch output folder.
    code = code.replace("app = cdk.App()", "app = cdk.App(context=CONTEXT, outdir=OUTDIR)")
    namespace = {"CONTEXT": cdk_json_context(), "OUTDIR": str(tmp_path)}
    exec(compile(code, "README.md", "exec"), namespace)
    assert (tmp_path / "Models.template.json").exists() and (tmp_path / "gpu-fleet-plan.json").exists()
