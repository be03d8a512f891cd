"""What a plan costs, from a prices file the user fetched (``ecs-gpu-sharing prices refresh``). Pure Python.

The repository ships no prices: they change, and differ by region. A prices file holds, for one region and one day,
each instance type's on-demand Linux price per hour (shared tenancy, no pre-installed software), as AWS's Price
List API gave it. With one, plans show per capacity the cost per hour and per month (730 hours, AWS's convention) at
the plan and at ``max_instances``, and per service its share: the GPU memory its tasks hold, over all the GPU memory
the capacity's planned instances have, times the capacity's cost (a task without a GPU is not charged a share).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import plan_document as pd
from .errors import GpuSharingError
from .files import read_json

HOURS_PER_MONTH = 730
REFRESH = "ecs-gpu-sharing prices refresh --region REGION --output prices.json"
NO_PRICES = f'no prices: run `{REFRESH}`, then give prices = "prices.json" in the fleet file or --prices'
# What a plan's files (Markdown, SVG) say without prices: the how-to is printed once, by the command that made them.
NOT_PRICED = "not priced (no prices given)"


@dataclass(frozen=True)
class Prices:
    region: str
    retrieved_on: datetime.date
    currency: str
    on_demand_per_hour: Mapping[str, float]
    source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "retrieved_on": self.retrieved_on.isoformat(),
            "currency": self.currency,
            "source": self.source,
            "on_demand_per_hour": dict(sorted(self.on_demand_per_hour.items())),
        }


def parse_prices(doc: Any, *, source: str) -> Prices:
    """A prices file's content, checked: one line naming the file and what is wrong."""
    fix = f"write it again with `{REFRESH}`"
    if not isinstance(doc, Mapping):
        raise GpuSharingError(f"{source}: not a prices file (a JSON object); {fix}")
    try:
        region, currency, when = doc["region"], doc["currency"], doc["retrieved_on"]
        table = doc["on_demand_per_hour"]
        retrieved = datetime.date.fromisoformat(when)
    except (KeyError, TypeError, ValueError):
        raise GpuSharingError(
            f"{source}: a prices file has region, currency, retrieved_on (YYYY-MM-DD) and on_demand_per_hour; {fix}"
        ) from None
    if not isinstance(region, str) or not isinstance(currency, str) or not isinstance(table, Mapping):
        raise GpuSharingError(f"{source}: region and currency are strings, on_demand_per_hour a table; {fix}")
    prices: dict[str, float] = {}
    for name, value in table.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise GpuSharingError(f"{source}: on_demand_per_hour.{name} must be a positive number, got {value!r}")
        prices[str(name)] = float(value)
    return Prices(region, retrieved, currency, prices, str(doc.get("source", "")))


def load_prices(path: str | Path) -> Prices:
    p = Path(path)
    if not p.exists():
        raise GpuSharingError(f"{p}: no such prices file; {NO_PRICES}")
    doc = read_json(p, what=f"prices file (write it again with `{REFRESH}`)")
    return parse_prices(doc, source=str(p))


def _money(value: float) -> float:
    return round(value, 2)


def add_cost(plan: pd.PlanDocument, prices: Prices | None) -> pd.PlanDocument:
    """The plan document (``plan_report.document``) with cost: per capacity, per service and in the summary; without
    prices, ``cost`` is null and ``cost_note`` says how to get them."""
    if prices is None:
        return replace(plan, summary=replace(plan.summary, cost=None, cost_note=NO_PRICES))
    total_hour = total_max_hour = total_expected_hour = 0.0
    missing = []
    shares: dict[str, float] = {}
    capacities = []
    for cap in plan.capacities:
        price = prices.on_demand_per_hour.get(cap.instance_type)
        if price is None:
            missing.append(cap.instance_type)
            capacities.append(replace(cap, cost=None))
            continue
        instances = cap.instance_count
        most = cap.max_instances or instances
        # What ECS keeps running after rollouts (core.placement), where the model ran; else the plan's instances.
        expected = cap.expected_instances or instances
        per_hour = instances * price
        total_hour += per_hour
        total_max_hour += most * price
        total_expected_hour += expected * price
        capacities.append(
            replace(
                cap,
                cost=pd.CapacityCost(
                    instance_type=cap.instance_type,
                    on_demand_per_hour=price,
                    per_hour=_money(per_hour),
                    per_month=_money(per_hour * HOURS_PER_MONTH),
                    at_max_per_hour=_money(most * price),
                    at_max_per_month=_money(most * price * HOURS_PER_MONTH),
                    expected_per_hour=_money(expected * price),
                    expected_per_month=_money(expected * price * HOURS_PER_MONTH),
                ),
            )
        )
        gpu_total = instances * cap.gpus_per_instance * cap.usable_gpu_memory_mib
        if not gpu_total:
            continue
        held: dict[str, int] = {}
        for group in cap.instances:
            for gpu in group.gpus:
                for t in gpu.tasks:
                    mib = cap.usable_gpu_memory_mib if gpu.whole else t.task_gpu_budget_mib * t.tasks
                    held[t.service] = held.get(t.service, 0) + mib * group.count
        for name, mib in held.items():
            shares[name] = shares.get(name, 0.0) + per_hour * mib / gpu_total
    services = tuple(
        replace(
            s,
            cost=(
                None
                if shares.get(s.name) is None
                else pd.ServiceCost(
                    per_hour=_money(shares[s.name]),
                    per_month=_money(shares[s.name] * HOURS_PER_MONTH),
                    basis="GPU memory held",
                )
            ),
        )
        for s in plan.services
    )
    cost = pd.FleetCost(
        currency=prices.currency,
        region=prices.region,
        prices_retrieved_on=prices.retrieved_on.isoformat(),
        per_hour=_money(total_hour),
        per_month=_money(total_hour * HOURS_PER_MONTH),
        at_max_per_hour=_money(total_max_hour),
        at_max_per_month=_money(total_max_hour * HOURS_PER_MONTH),
        expected_per_hour=_money(total_expected_hour),
        expected_per_month=_money(total_expected_hour * HOURS_PER_MONTH),
        unpriced_instance_types=tuple(sorted(set(missing))),
    )
    note = f"on-demand Linux prices of {prices.region} retrieved {prices.retrieved_on.isoformat()}" + (
        f"; no price for {', '.join(sorted(set(missing)))}: refresh the prices file" if missing else ""
    )
    return replace(
        plan,
        capacities=tuple(capacities),
        services=services,
        summary=replace(plan.summary, cost=cost, cost_note=note),
    )


def cost_lines(plan: pd.PlanDocument, *, hint: bool = True) -> list[str]:
    """Plain-text lines of a plan document's cost, for the table, the summary, Markdown and SVG. Without prices: how
    to get them where ``hint`` (a command's terminal output, once), else only that it is not priced (its files)."""
    summary = plan.summary
    cost = summary.cost
    if cost is None:
        return [f"cost: {(summary.cost_note or NO_PRICES) if hint else NOT_PRICED}"]
    cur = cost.currency
    expected = (  # a plan costed before ECS's placement was modelled has no expected cost
        ""
        if cost.expected_per_month is None
        else f"{cost.expected_per_month:,.2f} {cur}/month at the instances ECS is expected to keep after rollouts; "
    )
    lines = [
        f"cost: {cost.per_hour:,.2f} {cur}/hour, {cost.per_month:,.2f} {cur}/month at the plan; {expected}"
        f"{cost.at_max_per_hour:,.2f} {cur}/hour, {cost.at_max_per_month:,.2f} {cur}/month at max_instances "
        f"({summary.cost_note})"
    ]
    for cap in plan.capacities:
        c = cap.cost
        if c is not None:
            lines.append(
                f"  {cap.name} ({c.instance_type} at {c.on_demand_per_hour:g} {cur}/h): "
                f"{c.per_month:,.2f} {cur}/month, "
                + (
                    ""
                    if c.expected_per_month is None
                    else f"{c.expected_per_month:,.2f} as ECS is expected to run it, "
                )
                + f"{c.at_max_per_month:,.2f} at the maximum"
            )
    for service in plan.services:
        if service.cost is not None:
            lines.append(
                f"  service {service.name}: {service.cost.per_month:,.2f} {cur}/month (its GPU memory's share)"
            )
    return lines
