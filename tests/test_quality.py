"""Lint, format and strict typing run with the tests, so CI enforces them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True)


def test_ruff_lint() -> None:
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_shell_scripts_pass_shellcheck() -> None:
    """scripts/gpu_check.sh runs on a GPU host, never in CI; it is linted here so it does not rot."""
    scripts = sorted(str(p.relative_to(REPO)) for p in (REPO / "scripts").glob("*.sh"))
    assert "scripts/gpu_check.sh" in scripts
    shellcheck = Path(sys.executable).parent / "shellcheck"
    result = subprocess.run([str(shellcheck), *scripts], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _aws_cdk_modules_imported() -> set[str]:
    """Every aws_cdk module the type-checked code imports (``from aws_cdk import aws_x``, ``import aws_cdk.aws_x``,
    ``from aws_cdk.aws_x import Y``): lowercase names under aws_cdk are modules, capitalised ones its classes."""
    import ast
    import tomllib

    files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    paths = [p for f in files for p in ([REPO / f] if f.endswith(".py") else sorted((REPO / f).rglob("*.py")))]
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aws_cdk":
                found.add(node.module)
                if node.module == "aws_cdk":
                    found |= {f"aws_cdk.{a.name}" for a in node.names if a.name.islower()}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] == "aws_cdk"}
    return found


def test_mypy_reads_every_aws_cdk_module_the_code_imports() -> None:
    """mypy skips aws_cdk's modules but those listed (pyproject.toml: reading all ~300 costs 100 s); a module imported
    but not listed would be typed Any, its calls unchecked, with no word said."""
    import tomllib

    overrides = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    read = {m for o in overrides if o.get("follow_imports") == "normal" for m in o["module"]}
    assert "aws_cdk.aws_ecs" in _aws_cdk_modules_imported()  # the walk sees the imports it must
    missing = sorted(_aws_cdk_modules_imported() - read)
    assert not missing, f"add these to the follow_imports = 'normal' override in pyproject.toml: {missing}"
