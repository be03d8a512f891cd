"""The `constructs/` source root must never shadow the `constructs` library every CDK app imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_constructs_folder_has_no_init_file() -> None:
    assert not (REPO / "constructs" / "__init__.py").exists(), (
        "constructs/__init__.py shadows the 'constructs' library: delete it"
    )


def _probe(code: str, cwd: Path) -> str:
    # A fresh interpreter started in the repository root has the root on sys.path, as `python3 app.py` does.
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env=os.environ.copy(),
    )
    return result.stdout.strip()


def test_import_constructs_resolves_to_the_installed_library_from_the_repo_root() -> None:
    location = _probe("import constructs; print(constructs.__file__)", REPO)
    assert location != "None", "constructs resolved to a namespace package inside the repository"
    assert not Path(location).resolve().is_relative_to(REPO / "constructs")
    assert _probe("from constructs import Construct; print(Construct.__module__)", REPO).startswith("constructs")


def test_the_library_imports_from_the_source_root() -> None:
    location = _probe("import ecs_gpu_sharing; print(ecs_gpu_sharing.__file__)", REPO)
    assert Path(location).resolve().is_relative_to(REPO / "constructs" / "ecs_gpu_sharing")


PURE_PACKAGE = "ecs_gpu_sharing.core"


def test_pure_core_and_cli_import_neither_jsii_nor_boto3() -> None:
    # Every module of the core subpackage, found by walking it (no hand-kept list), and the CLI.
    loaded = _probe(
        "import importlib, pkgutil, sys, ecs_gpu_sharing.core as core, ecs_gpu_sharing.cli; "
        "names = [m.name for m in pkgutil.walk_packages(core.__path__, 'ecs_gpu_sharing.core.')]; "
        "[importlib.import_module(n) for n in names]; "
        "print(len(names), sorted({m.split('.')[0] for m in sys.modules} & "
        "{'jsii', 'aws_cdk', 'constructs', 'boto3', 'botocore'}))",
        REPO,
    )
    count, found = loaded.split(" ", 1)
    assert int(count) >= 10 and found == "[]", loaded


def test_the_constructs_and_operations_live_outside_the_core() -> None:
    package = REPO / "constructs" / "ecs_gpu_sharing"
    assert {p.name for p in (package / "cdk").glob("*.py")} >= {"capacity.py", "service.py", "task_definition.py"}
    assert {p.name for p in (package / "operations").glob("*.py")} >= {"aws.py", "cluster_status.py"}
    for path in (package / "core").rglob("*.py"):
        text = path.read_text()
        assert "import aws_cdk" not in text and "import boto3" not in text and "from aws_cdk" not in text, path


def test_jsii_prints_no_node_banner_and_uses_node_22_or_newer() -> None:
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert int(node.lstrip("v").split(".")[0]) >= 22, f"node on PATH is {node}: run through make"
    result = subprocess.run(
        [sys.executable, "-c", "import aws_cdk"], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stderr.strip() == "", result.stderr
