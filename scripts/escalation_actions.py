"""Writes core/data/escalation.json: the concrete IAM action names the task-role escalation check matches against.

The names come from botocore's service models (each API operation is an IAM action of the same name) plus the
permission-only actions the models do not list; which of them escalate follows the published privilege-escalation
lists (Rhino Security Labs, "AWS IAM Privilege Escalation - Methods and Mitigation"; Salesforce's cloudsplaining,
which follows it). Run it when botocore is upgraded; tests/test_escalation.py fails until the file matches.

    .venv/bin/python scripts/escalation_actions.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import botocore.session

OUT = Path(__file__).resolve().parents[1] / "constructs" / "ecs_gpu_sharing" / "core" / "data" / "escalation.json"
READ_VERBS = ("Get", "List", "Describe", "Generate", "Simulate")


def operations(service: str, prefix: str = "") -> list[str]:
    model = botocore.session.get_session().get_service_model(service)
    return sorted(f"{prefix or service}:{name}" for name in model.operation_names)


def build() -> dict[str, list[str]]:
    iam = [a for a in operations("iam") if not a.split(":", 1)[1].startswith(READ_VERBS)]
    sts_reads = {"sts:GetCallerIdentity", "sts:GetAccessKeyInfo", "sts:DecodeAuthorizationMessage"}
    sts = [a for a in operations("sts") if a not in sts_reads] + ["sts:TagSession", "sts:SetSourceIdentity"]
    logs_writes = [
        a
        for a in operations("logs")
        if a.split(":", 1)[1].startswith(("Put", "Create", "Delete", "Associate", "Disassociate", "Tag", "Untag"))
    ]
    return {
        "iam_writes": sorted(set(iam)),
        "sts": sorted(set(sts)),
        "logs_writes": sorted(set(logs_writes)),
    }


def main() -> int:
    OUT.write_text(json.dumps(build(), indent=1) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
