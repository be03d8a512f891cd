"""Writes core/data/resource_schemas.json: what CloudFormation's registry schemas (cfn-lint ships them) say of each
resource type that the library's checks read: the identifiers a template writes whole, and the create-only
properties, whose change replaces the resource.

A type's schema names its primary identifier and any additional identifiers. Where every property of one is writable
(none read-only), two resources that write the same values are one resource created twice: the second's create
handler fails with AlreadyExists (CloudFormation CLI User Guide, "Contract tests for resource types",
contract_create_create, which is run exactly where no identifier is read-only). ``NameClaimedTwice`` reads them.
A change to a create-only property replaces the resource (the schema's ``createOnlyProperties``), and CloudFormation
cannot replace a resource whose custom name stays ("CloudFormation cannot update a stack when a custom-named resource
requires replacing itself"): ``stacks replacements`` reads them. Kept: every type with a written identifier, and the
types ``NAMED`` names. Run it when cfn-lint is upgraded; tests/test_service_rules.py fails until the file matches.

    .venv/bin/python scripts/resource_schemas.py
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from ecs_gpu_sharing.core.service_rules.names import NAMED

OUT = Path(__file__).resolve().parents[1] / "constructs" / "ecs_gpu_sharing" / "core" / "data" / "resource_schemas.json"
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


def build() -> dict[str, dict[str, list[Any]]]:
    schemas = resources.files("cfnlint") / "data" / "schemas"
    index = json.loads((schemas / "providers" / f"{REGION}.json").read_text())
    out: dict[str, dict[str, list[Any]]] = {}
    for kind, digest in sorted(index.items()):
        schema = json.loads((schemas / "resources" / f"{digest}.json").read_text())
        found = [_written(schema, schema.get("primaryIdentifier", []))]
        found += [_written(schema, extra) for extra in schema.get("additionalIdentifiers") or []]
        identifiers = [ident for ident in found if ident]
        if identifiers or kind in NAMED:
            create_only = sorted(p.removeprefix("/properties/") for p in schema.get("createOnlyProperties", []))
            out[kind] = {"identifiers": identifiers, "create_only": create_only}
    return out


def main() -> int:
    lines = [f"{json.dumps(kind)}: {json.dumps(facts)}" for kind, facts in sorted(build().items())]
    OUT.write_text("{\n" + ",\n".join(lines) + "\n}\n")  # a type a line, for readable diffs
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
