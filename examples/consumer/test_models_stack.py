"""A consumer's snapshot test: the gpu_snapshot fixture comes from the installed library's pytest plugin."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from models_stack import ModelsStack


def test_models_stack(gpu_snapshot: Any) -> None:
    app = cdk.App()
    stack = ModelsStack(app, "Models")
    assert gpu_snapshot(name="template") == stack
    assert gpu_snapshot(name="plan") == app
