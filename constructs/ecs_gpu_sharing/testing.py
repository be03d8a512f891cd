"""A pytest plugin for teams that use this library: snapshot CDK templates and GPU fleet plans.

Installed with the library as a ``pytest11`` entry point, so pytest loads it without an import. With syrupy
installed it offers the ``gpu_snapshot`` fixture, syrupy's ``snapshot`` with a JSON extension that serializes

- a ``Stack`` as its synthesized template, normalized: no bootstrap-version parameter and rule, no CDK metadata
  resource or condition, asset hashes replaced by ``<asset-hash>`` (what changes when nothing real did), and a
  CloudWatch dashboard's body shown as the JSON document it holds (CloudFormation takes it as one string, often an
  ``Fn::Join`` around deploy-time values, which would make a changed budget line one changed line of 10,000
  characters): each deploy-time value stays where it is, a whole string or an ``Fn::Join`` of its parts;
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
    for resource in doc.get("Resources", {}).values():
        properties = resource.get("Properties") if isinstance(resource, dict) else None
        dashboard = resource.get("Type") == "AWS::CloudWatch::Dashboard"
        if dashboard and isinstance(properties, dict) and "DashboardBody" in properties:
            properties["DashboardBody"] = dashboard_document(properties["DashboardBody"])
    return dict(json.loads(_ASSET_HASH.sub("<asset-hash>", json.dumps(doc))))


_MARK = re.compile(r"@@deploy-time-(\d+)@@")


def dashboard_document(body: Any) -> Any:
    """A dashboard body (a string, or an ``Fn::Join`` with "" of strings and deploy-time values) as the JSON it
    holds, each deploy-time value in its place; the body as it was when it is not JSON."""
    if isinstance(body, str):
        parts: list[Any] = [body]
    elif isinstance(body, dict) and list(body) == ["Fn::Join"] and body["Fn::Join"][0] == "":
        parts = list(body["Fn::Join"][1])
    else:
        return body
    if any(isinstance(p, str) and _MARK.search(p) for p in parts):
        return body  # the body itself holds a mark's spelling: left as it is rather than misread
    values = [p for p in parts if not isinstance(p, str)]
    marked, n = [], 0
    for part in parts:
        if isinstance(part, str):
            marked.append(part)
        else:
            marked.append(f"@@deploy-time-{n}@@")
            n += 1
    try:
        document = json.loads("".join(marked))
    except ValueError:
        return body

    def put_back(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: put_back(v) for k, v in node.items()}
        if isinstance(node, list):
            return [put_back(v) for v in node]
        if not isinstance(node, str) or not _MARK.search(node):
            return node
        pieces = _MARK.split(node)
        # split() alternates text and mark numbers: text, n, text, n, ..., text
        joined = [values[int(p)] if i % 2 else p for i, p in enumerate(pieces) if i % 2 or p]
        return joined[0] if len(joined) == 1 else {"Fn::Join": ["", joined]}

    return put_back(document)


def fleet_plan(app: Any) -> dict[str, Any]:
    """The GPU fleet plan an app, or a ``cdk.Stage`` in one, wrote when it synthesized (the app is synthesized here if
    it was not: CDK writes a stage's plan only when the whole app synthesizes)."""
    root = app.node.root
    root.synth()
    path = Path(app.outdir) / PLAN_FILE
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
