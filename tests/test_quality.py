"""Lint, format and strict typing run with the tests, so CI enforces them."""

from __future__ import annotations

import json
import os
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


def test_the_mps_measurements_script_runs_its_phases_and_writes_what_it_saw(tmp_path: Path) -> None:
    """scripts/mps_facts.py runs on a GPU host, never in CI (docs/gpu-measured.md). Here, against stand-ins for
    nvidia-smi and the MPS control daemon, its orchestration is run so it does not rot: each phase runs, a client that
    cannot load libcuda answers "refused", and the JSON holds every measurement it printed."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "nvidia-smi").write_text(
        '#!/bin/sh\ncase "$1" in\n  --query-gpu=memory.used) echo 0;;\n'
        '  --query-gpu=*) echo "Stand-in GPU, 0.0, 1000, Default";;\n  -q) echo "FB Memory Usage Total : 1000 MiB BAR1";;\n'
        "esac\n"
    )
    (tools / "nvidia-cuda-mps-control").write_text("#!/bin/sh\ncat >/dev/null\n")
    for tool in tools.iterdir():
        tool.chmod(0o755)
    out = tmp_path / "facts.json"
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "LD_LIBRARY_PATH": str(tmp_path)}
    phases = ["--phase", "memory", "--phase", "floor", "--phase", "environment"]
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "mps_facts.py"), "--json", str(out), *phases],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    facts = json.loads(out.read_text())
    assert facts["gpu"] == ["Stand-in GPU", "0.0", "1000", "Default"]
    assert "Total : 1000 MiB" in facts["nvidia_smi_fb_memory"]
    answers = [*facts["context_under_small_limits"].values(), *facts["environment"].values()]
    # 6 limits tried, 7 environments; without libcuda each is refused at load (on a GPU host, refused or ready)
    assert len(answers) == 13 and all(a.split()[0] in ("refused", "ready") for a in answers), answers
    assert all(f"{key}: " in done.stdout for key in facts)
