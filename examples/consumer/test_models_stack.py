"""A consumer's snapshot tests: the gpu_snapshot fixture comes from the installed library's pytest plugin. The template
and the plan are two tests, so a change to one never hides a change to the other."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from models_stack import ModelsStack


@pytest.fixture(scope="module")
def app() -> cdk.App:
    app = cdk.App()
    ModelsStack(app, "Models")
    return app


def test_template(app: cdk.App, gpu_snapshot: Any) -> None:
    assert gpu_snapshot(name="template") == app.node.find_child("Models")  # the normalized template


def test_plan(app: cdk.App, gpu_snapshot: Any) -> None:
    assert gpu_snapshot(name="plan") == app  # the GPU fleet plan
