"""The pytest plugin teams use: loaded from the installed library's entry point in an app outside this suite."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ecs_gpu_sharing.testing import normalize_template

from conftest import REPO

pytestmark = pytest.mark.long  # four pytest runs of a consumer app: started first (tests/conftest.py)

CONSUMER = REPO / "examples" / "consumer"


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A separate run rooted in the consumer's folder: nothing of this suite (conftest, paths) is on its path.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(folder), *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )


def test_a_consumer_app_snapshots_round_trip_and_a_change_reads_as_a_diff(tmp_path: Path) -> None:
    app = tmp_path / "consumer"
    shutil.copytree(CONSUMER, app, ignore=shutil.ignore_patterns("__snapshots__", "__pycache__"))
    created = _pytest(app, "--snapshot-update")
    assert created.returncode == 0, created.stdout + created.stderr
    snapshots = sorted(p.name for p in (app / "__snapshots__" / "test_models_stack").iterdir())
    assert snapshots == ["test_plan[plan].json", "test_template[template].json"]
    template = json.loads((app / "__snapshots__" / "test_models_stack" / "test_template[template].json").read_text())
    assert "BootstrapVersion" not in template.get("Parameters", {}) and "CDKMetadata" not in template["Resources"]
    plan = json.loads((app / "__snapshots__" / "test_models_stack" / "test_plan[plan].json").read_text())
    assert [s["name"] for s in plan["services"]] == ["embedder"]

    again = _pytest(app)
    assert again.returncode == 0, again.stdout + again.stderr

    stack = app / "models_stack.py"
    stack.write_text(stack.read_text().replace("gpu_budget_mib=4096", "gpu_budget_mib=6144"))
    changed = _pytest(app)
    assert changed.returncode == 1
    assert "2 failed" in changed.stdout, changed.stdout  # the plan's diff is not hidden behind the template's
    # syrupy shows changed lines, old and new, not one changed string of thousands of characters.
    shown = [" ".join(line.split()) for line in changed.stdout.splitlines() if line.startswith("E ")]
    assert any("4096" in line for line in shown) and any("6144" in line for line in shown), changed.stdout
    assert max(len(line) for line in changed.stdout.splitlines()) < 400

    # What a reviewer reads in the pull request: the snapshot file's diff, one short line per changed figure. The
    # task definition's memory, the dashboard's budget line (its body is shown as a document, the budget read from
    # the plan) and the alarm's threshold (90%) each change on a line of their own.
    old = (app / "__snapshots__" / "test_models_stack" / "test_template[template].json").read_text().splitlines()
    updated = _pytest(app, "--snapshot-update")
    assert updated.returncode == 0, updated.stdout
    new = (app / "__snapshots__" / "test_models_stack" / "test_template[template].json").read_text().splitlines()
    diff = [" ".join(line.split()) for line in difflib.unified_diff(old, new, lineterm="", n=0)][2:]
    changes = [line.rstrip(",") for line in diff if line[:1] in "+-"]
    for before, after in (
        ('"Memory": 4096', '"Memory": 6144'),
        ('"value": 4096', '"value": 6144'),
        ('"Threshold": 3686', '"Threshold": 5529'),
        ('"label": "budget 4096 MiB"', '"label": "budget 6144 MiB"'),
    ):
        assert f"- {before}" in changes and f"+ {after}" in changes, "\n".join(diff)
    assert max(len(line) for line in changes) < 300, "\n".join(diff)


def test_normalize_template_drops_what_churns() -> None:
    template = {
        "Parameters": {"BootstrapVersion": {"Type": "AWS::SSM::Parameter::Value<String>"}},
        "Rules": {"CheckBootstrapVersion": {}},
        "Conditions": {"CDKMetadataAvailable": {}},
        "Resources": {
            "CDKMetadata": {"Type": "AWS::CDK::Metadata"},
            "Fn": {"Properties": {"Code": {"S3Key": "0" * 64 + ".zip"}}},
        },
    }
    assert normalize_template(template) == {"Resources": {"Fn": {"Properties": {"Code": {"S3Key": "<asset-hash>"}}}}}


def test_a_dashboard_body_is_shown_as_the_document_it_holds_with_deploy_time_values_in_place() -> None:
    region = {"Ref": "AWS::Region"}
    service = {"Fn::GetAtt": ["Svc", "Name"]}
    body = {
        "Fn::Join": [
            "",
            ['{"widgets":[{"properties":{"region":"', region, '","title":"svc ', service, '","value":2048}}]}'],
        ]
    }
    template = {"Resources": {"D": {"Type": "AWS::CloudWatch::Dashboard", "Properties": {"DashboardBody": body}}}}
    shown = normalize_template(template)["Resources"]["D"]["Properties"]["DashboardBody"]
    assert shown == {
        "widgets": [{"properties": {"region": region, "title": {"Fn::Join": ["", ["svc ", service]]}, "value": 2048}}]
    }
    # A plain string body is parsed too; a body that is not JSON, or that spells a mark itself, is kept as it was.
    plain = {"Resources": {"D": {"Type": "AWS::CloudWatch::Dashboard", "Properties": {"DashboardBody": '{"a":1}'}}}}
    assert normalize_template(plain)["Resources"]["D"]["Properties"]["DashboardBody"] == {"a": 1}
    for kept in ("not json", {"Fn::Join": ["", ['{"a":"@@deploy-time-0@@', region, '"}']]}):
        odd = {"Resources": {"D": {"Type": "AWS::CloudWatch::Dashboard", "Properties": {"DashboardBody": kept}}}}
        assert normalize_template(odd)["Resources"]["D"]["Properties"]["DashboardBody"] == kept
