"""Writes core/data/resource_identifiers.json: for each CloudFormation resource type, the identifiers a template
writes whole, as CloudFormation's registry schemas define them (cfn-lint ships them).

A resource type's schema names its primary identifier and any additional identifiers. Where every property of one
is writable (none read-only), two resources that write the same values are one resource created twice: the create
handler of the second fails with AlreadyExists (CloudFormation CLI User Guide, "Contract tests for resource types",
contract_create_create, which is run exactly where no identifier is read-only). ``NameClaimedTwice`` reads this
file. Run it when cfn-lint is upgraded; tests/test_service_rules.py fails until the file matches.

    .venv/bin/python scripts/resource_identifiers.py
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

OUT = (
    Path(__file__).resolve().parents[1]
    / "constructs"
    / "ecs_gpu_sharing"
    / "core"
    / "data"
    / "resource_identifiers.json"
)
REGION = "us-east-1"  # the schemas of one region: a type's identifiers are the same wherever it exists


def _written(schema: dict[str, Any], pointers: list[str]) -> list[str] | None:
    """The top-level property names of an identifier, where the template writes every one of them."""
    read_only = set(schema.get("readOnlyProperties", []))
    names = [p.removeprefix("/properties/") for p in pointers]
    if (
        not pointers
        or read_only & set(pointers)
        or any("/" in n or n not in schema.get("properties", {}) for n in names)
    ):
        return None
    return names


def build() -> dict[str, list[list[str]]]:
    schemas = resources.files("cfnlint") / "data" / "schemas"
    index = json.loads((schemas / "providers" / f"{REGION}.json").read_text())
    out: dict[str, list[list[str]]] = {}
    for kind, digest in sorted(index.items()):
        schema = json.loads((schemas / "resources" / f"{digest}.json").read_text())
        found = [_written(schema, schema.get("primaryIdentifier", []))]
        found += [_written(schema, extra) for extra in schema.get("additionalIdentifiers") or []]
        kept = [ident for ident in found if ident]
        if kept:
            out[kind] = kept
    return out


def main() -> int:
    lines = [f"{json.dumps(kind)}: {json.dumps(identifiers)}" for kind, identifiers in sorted(build().items())]
    OUT.write_text("{\n" + ",\n".join(lines) + "\n}\n")  # a type a line, for readable diffs
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
