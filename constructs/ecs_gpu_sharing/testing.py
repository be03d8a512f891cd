"""A pytest plugin for teams that use this library: snapshot CDK templates and GPU fleet plans.

Installed with the library as a ``pytest11`` entry point, so pytest loads it without an import. With syrupy
installed it offers the ``gpu_snapshot`` fixture, syrupy's ``snapshot`` with a JSON extension that serializes

- a ``Stack`` as its synthesized template, normalized: no bootstrap-version parameter and rule, no CDK metadata
  resource or condition, asset hashes replaced by ``<asset-hash>`` (what changes when nothing real did);
- an ``App`` (or ``Stage``) as its GPU fleet plan (``gpu-fleet-plan.json``, written when it synthesizes);
- anything else (a dict) as JSON.

::

    def test_models(gpu_snapshot):
        app = cdk.App()
        stack = ModelsStack(app, "Models")
        assert gpu_snapshot(name="template") == stack
        assert gpu_snapshot(name="plan") == app

Update snapshots with ``pytest --snapshot-update``. CDK is imported only when a stack is serialized.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

_ASSET_HASH = re.compile(r"[0-9a-f]{64}(\.(zip|json))?")
PLAN_FILE = "gpu-fleet-plan.json"


def normalize_template(template: dict[str, Any]) -> dict[str, Any]:
    """A template without what churns when nothing real changed: the bootstrap check, CDK metadata, asset hashes."""
    doc = json.loads(json.dumps(template))
    doc.get("Parameters", {}).pop("BootstrapVersion", None)
    doc.get("Rules", {}).pop("CheckBootstrapVersion", None)
    doc.get("Resources", {}).pop("CDKMetadata", None)
    doc.get("Conditions", {}).pop("CDKMetadataAvailable", None)
    for key in ("Parameters", "Rules", "Conditions"):
        if key in doc and not doc[key]:
            del doc[key]
    return dict(json.loads(_ASSET_HASH.sub("<asset-hash>", json.dumps(doc))))


def fleet_plan(app: Any) -> dict[str, Any]:
    """The GPU fleet plan an app wrote when it synthesized (it is synthesized here if it was not)."""
    assembly = app.synth()
    path = Path(assembly.directory) / PLAN_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: the app wrote no GPU fleet plan (does it have a GpuCapacity?)")
    return dict(json.loads(path.read_text(encoding="utf-8")))


def to_snapshot_data(data: Any) -> Any:
    """What ``gpu_snapshot`` stores for ``data``: a stack's normalized template, an app's plan, or ``data``."""
    cdk = _cdk_if_loaded()
    if cdk is not None and isinstance(data, cdk.Stack):
        from aws_cdk.assertions import Template

        return normalize_template(dict(Template.from_stack(data).to_json()))
    if cdk is not None and isinstance(data, cdk.Stage):
        return fleet_plan(data)
    return data


def _cdk_if_loaded() -> Any:
    import sys

    return sys.modules.get("aws_cdk")


try:
    from syrupy.extensions.json import JSONSnapshotExtension

    HAVE_SYRUPY = True
except ImportError:  # syrupy is optional: without it, the plugin offers nothing
    HAVE_SYRUPY = False

if HAVE_SYRUPY:

    class GpuSnapshotExtension(JSONSnapshotExtension):
        """syrupy's JSON extension, normalizing CDK stacks and apps first (see the module's docstring)."""

        def serialize(self, data: Any, **kwargs: Any) -> Any:
            return super().serialize(to_snapshot_data(data), **kwargs)

    @pytest.fixture
    def gpu_snapshot(snapshot: Any) -> Any:
        """syrupy's ``snapshot``, storing stacks as normalized templates and apps as their GPU fleet plans."""
        return snapshot.use_extension(GpuSnapshotExtension)
