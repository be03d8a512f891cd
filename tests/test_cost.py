"""#24 section 3: cost from AWS's prices, fetched by the user (nothing committed): prices refresh against botocore's
Stubber, cost in the plan's JSON, table, Markdown and SVG, and plan diff exiting 1 when the cost grows."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ecs_gpu_sharing import GpuSharingError
from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import cost
from ecs_gpu_sharing.operations import prices

from conftest import THREE_MODELS

EXAMPLE = THREE_MODELS.read_text()
DAY = datetime.date(2026, 11, 30)


def _item(instance_type: str, usd: str, region: str = "us-east-1") -> str:
    """One Price List item as the API returns it: a JSON string (PriceListJsonItem), format aws_v1."""
    sku = f"SKU{instance_type.replace('.', '')}"
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "attributes": {
                    "instanceType": instance_type,
                    "regionCode": region,
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    f"{sku}.JRTCKXETXF": {
                        "priceDimensions": {
                            f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "pricePerUnit": {"USD": usd},
                                "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                    }
                },
                "Reserved": {
                    f"{sku}.4NA7Y494T4": {
                        "priceDimensions": {
                            f"{sku}.4NA7Y494T4.6YS6EN2CT7": {"unit": "Hrs", "pricePerUnit": {"USD": "0.5"}}
                        }
                    }
                },
            },
            "version": "20261101000000",
            "publicationDate": "2026-11-01T00:00:00Z",
        }
    )


def _expect(stub: Stubber, instance_type: str, items: list[str], region: str = "us-east-1") -> None:
    stub.add_response(
        "get_products",
        {"FormatVersion": "aws_v1", "PriceList": items},
        {"ServiceCode": "AmazonEC2", "Filters": prices._filters(region, instance_type), "FormatVersion": "aws_v1"},
    )


def _pricing() -> Any:
    return boto3.client("pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def test_refresh_reads_the_on_demand_price_of_each_type_and_leaves_out_what_has_none() -> None:
    pricing = _pricing()
    stub = Stubber(pricing)
    _expect(stub, "g6.2xlarge", [_item("g6.2xlarge", "0.9776000000")])
    _expect(stub, "g6e.2xlarge", [_item("g6e.2xlarge", "2.2420000000")])
    _expect(stub, "p6-b300.48xlarge", [])  # no offer in this region
    with stub:
        result = prices.refresh(pricing, "us-east-1", ["g6e.2xlarge", "g6.2xlarge", "p6-b300.48xlarge"], DAY)
        stub.assert_no_pending_responses()
    assert result.on_demand_per_hour == {"g6.2xlarge": 0.9776, "g6e.2xlarge": 2.242}
    doc = result.to_json()
    assert (doc["region"], doc["retrieved_on"], doc["currency"]) == ("us-east-1", "2026-11-30", "USD")
    assert cost.parse_prices(doc, source="p.json") == result  # what is written reads back


def test_two_prices_for_one_type_are_reported_not_guessed() -> None:
    pricing = _pricing()
    stub = Stubber(pricing)
    _expect(stub, "g6.2xlarge", [_item("g6.2xlarge", "0.9776"), _item("g6.2xlarge", "1.1")])
    with stub, pytest.raises(GpuSharingError, match=r"2 on-demand prices for g6\.2xlarge"):
        prices.refresh(pricing, "us-east-1", ["g6.2xlarge"], DAY)


def test_a_throttled_price_list_is_one_line() -> None:
    pricing = _pricing()
    stub = Stubber(pricing)
    stub.add_client_error("get_products", "ThrottlingException", "Rate exceeded")
    with stub, pytest.raises(GpuSharingError) as error:
        prices.refresh(pricing, "us-east-1", ["g6.2xlarge"], DAY)
    assert str(error.value).count("\n") == 0 and "ThrottlingException" in str(error.value)


def test_refresh_refuses_an_unknown_region_before_any_call(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prices", "refresh", "--region", "xx-nowhere-1"]) == 1
    assert "--region: unknown region 'xx-nowhere-1': use a region name such as us-east-1" in capsys.readouterr().err


# --- costed plans ---------------------------------------------------------------------------------------------


def _prices_file(folder: Path, table: dict[str, float] | None = None) -> Path:
    path = folder / "prices.json"
    doc = {
        "region": "us-east-1",
        "retrieved_on": "2026-11-30",
        "currency": "USD",
        "source": "test",
        "on_demand_per_hour": table if table is not None else {"g6.2xlarge": 1.0, "g6e.2xlarge": 2.5},
    }
    path.write_text(json.dumps(doc))
    return path


def test_a_plan_with_prices_carries_cost_in_json_table_markdown_and_svg(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(EXAMPLE.replace('name = "models"', 'name = "models"\nprices = "prices.json"', 1))
    _prices_file(tmp_path)
    main(["plan", str(fleet), "--json"])
    doc = json.loads(capsys.readouterr().out)
    caps = {c["name"]: c for c in doc["capacities"]}
    l4, l40s = caps["l4"], caps["l40s"]
    l4_instances = sum(g["count"] for g in l4["instances"])
    assert l4["cost"]["per_hour"] == round(l4_instances * 1.0, 2)
    assert l4["cost"]["per_month"] == round(l4_instances * 1.0 * 730, 2)
    assert l4["cost"]["at_max_per_month"] == round(l4["max_instances"] * 730, 2)
    assert l40s["cost"]["on_demand_per_hour"] == 2.5
    summary = doc["summary"]["cost"]
    assert summary["per_hour"] == round(l4["cost"]["per_hour"] + l40s["cost"]["per_hour"], 2)
    # Each service's share follows the GPU memory it holds; together they are at most the capacity's cost.
    services = {s["name"]: s for s in doc["services"]}
    l4_share = services["embedder"]["cost"]["per_hour"] + services["reranker"]["cost"]["per_hour"]
    assert 0 < l4_share <= l4["cost"]["per_hour"] + 0.01
    main(["plan", str(fleet)])
    table = capsys.readouterr().out
    assert "cost: " in table and "USD/month at the plan" in table and "service embedder:" in table
    svg = tmp_path / "plan.svg"
    main(["plan", str(fleet), "--svg", str(svg), "--prices", str(tmp_path / "prices.json")])
    capsys.readouterr()
    assert "USD/month at the plan" in svg.read_text()


def test_without_prices_a_command_says_how_to_get_them_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["plan", str(THREE_MODELS), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["cost"] is None and "prices refresh --region" in doc["summary"]["cost_note"]
    # The terminal says how, once; the picture it also wrote says only that it is not priced.
    svg = tmp_path / "plan.svg"
    main(["plan", str(THREE_MODELS), "--svg", str(svg)])
    out = capsys.readouterr().out
    assert out.count("prices refresh") == 1 and "cost: no prices: run `ecs-gpu-sharing prices refresh" in out
    assert "prices refresh" not in svg.read_text() and f"cost: {cost.NOT_PRICED}" in svg.read_text()
    # A plan JSON shown again: the same, once.
    plan_json = tmp_path / "plan.json"
    plan_json.write_text(json.dumps(doc))
    main(["plan", str(plan_json), "--svg", str(svg)])
    assert capsys.readouterr().out.count("prices refresh") == 1 and "prices refresh" not in svg.read_text()


def test_an_instance_type_without_a_price_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _prices_file(tmp_path, {"g6.2xlarge": 1.0})
    main(["plan", str(THREE_MODELS), "--json", "--prices", str(path)])
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["cost"]["unpriced_instance_types"] == ["g6e.2xlarge"]
    assert "no price for g6e.2xlarge" in doc["summary"]["cost_note"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[", "not JSON"),
        ('{"region": "us-east-1"}', "a prices file has region, currency, retrieved_on"),
        (
            '{"region": "us-east-1", "currency": "USD", "retrieved_on": "2026-11-30", "on_demand_per_hour": {"x": -1}}',
            "on_demand_per_hour.x must be a positive number",
        ),
    ],
)
def test_a_bad_prices_file_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(GpuSharingError, match=message):
        cost.load_prices(path)


def test_plan_diff_exits_1_when_the_cost_grows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cheap = _prices_file(tmp_path, {"g6.2xlarge": 1.0, "g6e.2xlarge": 2.5})
    old = tmp_path / "old.json"
    main(["plan", str(THREE_MODELS), "--json", "--prices", str(cheap)])
    old.write_text(capsys.readouterr().out)
    dear = tmp_path / "dear.json"
    dear.write_text(cheap.read_text().replace("2.5", "3.5"))
    new = tmp_path / "new.json"
    main(["plan", str(THREE_MODELS), "--json", "--prices", str(dear)])
    new.write_text(capsys.readouterr().out)
    assert main(["plan", "diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "cost (cents/month)" in out and "grew: yes" in out
    assert main(["plan", "diff", str(old), str(old)]) == 0
    assert main(["plan", "diff", str(new), str(old), "--markdown"]) == 0  # cheaper: nothing grew
    assert "| cost (cents/month) |" in capsys.readouterr().out


def test_a_construct_app_costs_its_plan_files_through_context(tmp_path: Path) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs

    from ecs_gpu_sharing import GpuCapacity, MpsShare, SharedGpuService, SharedGpuTaskDefinition

    path = _prices_file(tmp_path)
    out = tmp_path / "cdk.out"
    from conftest import cdk_json_context

    app = cdk.App(context={**cdk_json_context(), "ecs-gpu-sharing:prices": str(path)}, outdir=str(out))
    stack = cdk.Stack(app, "Models")
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
    l4 = GpuCapacity(stack, "l4", cluster=cluster, instance_types=["g6.2xlarge"])
    task = SharedGpuTaskDefinition(stack, "Task")
    task.add_container(
        "model",
        image=ecs.ContainerImage.from_registry("repo/x@sha256:" + "a" * 64),
        memory_limit_mib=2048,
        gpu=MpsShare(gpu_budget_mib=4096),
    )
    SharedGpuService(stack, "embedder", cluster=cluster, capacity=l4, task_definition=task, desired_count=4)
    app.synth()
    doc = json.loads((out / "gpu-fleet-plan.json").read_text())
    assert doc["summary"]["cost"]["per_hour"] == 1.0 and doc["capacities"][0]["cost"]["instance_type"] == "g6.2xlarge"
    assert "## Cost" in (out / "gpu-fleet-plan.md").read_text()
