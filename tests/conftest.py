"""Shared fixtures. jsii synths cost seconds: apps are synthesized once per session and shared."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def benchmarks_on_path() -> Iterator[None]:
    """``benchmarks/`` importable for the block (the generator, the benchmark's own LP and fleets)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        yield
    finally:
        sys.path.pop(0)


def cdk_json_context() -> dict[str, Any]:
    """cdk.json's context (feature flags), so test apps synthesize as `cdk synth` does."""
    return dict(json.loads((REPO / "cdk.json").read_text())["context"])


def new_app(**context: Any) -> Any:
    import aws_cdk as cdk

    return cdk.App(context={**cdk_json_context(), **context})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules marked ``long`` first, each module's tests in their order. `make test` hands the workers a module at a
    time in this order (``--dist loadfile --no-loadscope-reorder``): started last, a module of a minute or more left
    one worker running it alone while the other had nothing left to take."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture
def fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials for moto and botocore's Stubber, and no AWS configuration of the machine's to read."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# A fixed three-model fleet (the first example) that planner, CLI and operations tests plan against, so the
# example fleet.toml can grow without rewriting them.
THREE_MODELS = REPO / "tests" / "fleets" / "three-models.toml"

# Five services of 0.24 to 0.62 of an H100 (cpu units, memory MiB, GPU budgets MiB) and their counts: a fifth of
# ``benchmarks/shaped_fleets.py few 25 10000``, planned on eight H100s a host (p5.48xlarge).
FIVE_LLMS = [
    ((4608, 47616, (19712, 1024)), 444),
    ((5248, 21376, (18176, 512, 512)), 401),
    ((10496, 238080, (50176,)), 280),
    ((7680, 89088, (21760, 768)), 377),
    ((7040, 89472, (22272,)), 496),
]


def plan_only(doc: dict[str, Any]) -> dict[str, Any]:
    """A plan document without what only a synth can know (the allow-list's allowances and what it could not judge,
    read from the written templates; each service's stack and logical id): what the CLI and a synth must agree on."""
    out = {k: v for k, v in doc.items() if k not in ("allowances", "not_judged")}
    out["services"] = [{k: v for k, v in s.items() if k != "deployed_as"} for s in doc.get("services", [])]
    return out


def write_assembly(tmp_path: Path, templates: dict[str, dict[str, Any]]) -> Path:
    """A cloud assembly as cdk synth writes its manifest: one environment-agnostic stack a template."""
    artifacts = {}
    for name, template in templates.items():
        (tmp_path / f"{name}.template.json").write_text(json.dumps(template))
        artifacts[name] = {
            "type": "aws:cloudformation:stack",
            "environment": "aws://unknown-account/unknown-region",
            "properties": {"templateFile": f"{name}.template.json"},
        }
    (tmp_path / "manifest.json").write_text(json.dumps({"version": "48.0.0", "artifacts": artifacts}))
    return tmp_path


def load_script(path: Path) -> ModuleType:
    """A script of the repository (scripts/, benchmarks/) as a module, to call its functions."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def staged_gpu_lp_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The staged plan without its GPU LP over groups of many sizes (``packing._pack_staged``'s ``many``), as the
    surge's plan has it: for tests that show what another strategy wins where that LP would win it first."""
    from ecs_gpu_sharing.core.planner import packing

    staged = packing._pack_staged
    monkeypatch.setattr(packing, "_pack_staged", lambda c, g, enough=0, many=True, known=0: staged(c, g, enough, False))
