"""Shared fixtures. jsii synths cost seconds: apps are synthesized once per session and shared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def cdk_json_context() -> dict[str, Any]:
    """cdk.json's context (feature flags), so test apps synthesize as `cdk synth` does."""
    return dict(json.loads((REPO / "cdk.json").read_text())["context"])


def new_app(**context: Any) -> Any:
    import aws_cdk as cdk

    return cdk.App(context={**cdk_json_context(), **context})


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# A fixed three-model fleet (the first example) that planner, CLI and operations tests plan against, so the
# example fleet.toml can grow without rewriting them.
THREE_MODELS = REPO / "tests" / "fleets" / "three-models.toml"


def plan_only(doc: dict[str, Any]) -> dict[str, Any]:
    """A plan document without what only a synth can know (the allow-list's allowances and what it could not judge,
    read from the written templates; each service's stack and logical id): what the CLI and a synth must agree on."""
    out = {k: v for k, v in doc.items() if k not in ("allowances", "not_judged")}
    out["services"] = [{k: v for k, v in s.items() if k != "deployed_as"} for s in doc.get("services", [])]
    return out
