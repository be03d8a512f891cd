"""The pytest plugin teams use: loaded from the installed library's entry point in an app outside this suite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ecs_gpu_sharing.testing import normalize_template

from conftest import REPO

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
    # syrupy shows the changed line of the template, old and new, as a diff.
    diff = [" ".join(line.split()) for line in changed.stdout.splitlines()]
    assert 'E - "Memory": 4096' in diff and 'E + "Memory": 6144' in diff


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
