"""A plan document drawn as SVG (``plan --svg``): each group of identical hosts' GPUs as bars filled by their tasks,
the hosts' CPU and memory, a legend and the totals. Pure Python."""

from __future__ import annotations

import colorsys
import hashlib
from html import escape

from . import plan_document as pd
from . import text
from .cost import cost_lines


def colour_of(name: str) -> str:
    """A service's colour, from its name alone: the same in every version of a fleet and every drawing, so two
    screenshots of a plan can be compared (the bars also carry the name). Written as hex: some SVG converters draw
    ``hsl()`` black."""
    digest = hashlib.sha256(name.encode()).digest()
    hue = int.from_bytes(digest[:2], "big") / 65536
    lightness = 0.42 + (digest[2] % 3) * 0.08  # three lightnesses, so two close hues still differ
    r, g, b = colorsys.hls_to_rgb(hue, lightness, 0.6)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def _colours(names: list[str]) -> dict[str, str]:
    return {name: colour_of(name) for name in names}


def _share_bar(x: int, y: int, width: int, used: int, total: int, label: str) -> list[str]:
    filled = width * min(used, total) / total if total else 0
    return [
        f'<rect x="{x}" y="{y}" width="{width}" height="6" fill="#eeeeee" stroke="#999999"/>',
        f'<rect x="{x}" y="{y}" width="{filled:.1f}" height="6" fill="#555555"><title>{escape(label)}</title></rect>',
    ]


def to_svg(plan: pd.PlanDocument) -> str:
    """A plan document (``document``, a loaded ``gpu-fleet-plan.json`` included) drawn: each group of identical hosts'
    GPUs as bars, filled by their tasks in proportion to GPU memory, with two thin bars for the CPU and memory one
    host's tasks take (where those bind, free GPU memory is no waste); per capacity its instances, maximum and the
    deployment surge's need; a caption with the totals and the cost (or how to get prices)."""
    bar_w, bar_h, gap, label_w = 360, 18, 6, 190
    services = {s.name: s for s in plan.services}
    colour = _colours(list(services))
    rows: list[str] = []
    y = 10
    for cap in plan.capacities:
        usable = cap.usable_gpu_memory_mib
        most = cap.max_instances
        rows.append(
            f'<text x="4" y="{y + 12}" font-weight="bold">{escape(cap.name)} ({escape(cap.instance_type)}): '
            f"{text.count(cap.instance_count, 'instance')}, max {most if most is not None else 'none'}, "
            f"deployment surge needs {cap.surge_instances}"
            + (f", {cap.ecs_placement_instances} as ECS places it" if cap.ecs_placement_instances is not None else "")
            + "</text>"
        )
        y += bar_h + gap
        first = 0
        for group in cap.instances:
            count = group.count
            label = str(first) if count == 1 else f"{first}-{first + count - 1}"
            first += count
            plural = "hosts" if count > 1 else "host"
            for g, gpu in enumerate(group.gpus):
                rows.append(f'<text x="14" y="{y + 13}">{plural} {label} GPU {g}</text>')
                rows.append(
                    f'<rect x="{label_w}" y="{y}" width="{bar_w}" height="{bar_h}" fill="#eeeeee" stroke="#999999"/>'
                )
                x = float(label_w)
                for t in gpu.tasks:
                    name, budget = t.service, t.task_gpu_budget_mib
                    for _ in range(t.tasks):
                        w = bar_w if gpu.whole else bar_w * budget / usable
                        title = escape(f"{name}: {budget} MiB{_allocation_tip(services.get(name))}")
                        rows.append(
                            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                            f'fill="{colour.get(name, "#888888")}" stroke="#ffffff"><title>{title}</title></rect>'
                        )
                        fits = int((w - 4) / 6)  # characters that fit the bar at 10 px
                        if fits >= 3:
                            shown = name if len(name) <= fits else name[: fits - 1] + "…"
                            rows.append(
                                f'<text x="{x + 2:.1f}" y="{y + 13}" font-size="10" fill="#ffffff">'
                                f"{escape(shown)}</text>"
                            )
                        x += w
                rows.append(
                    f'<text x="{label_w + bar_w + 8}" y="{y + 13}">{gpu.used_gpu_memory_mib} / {usable} MiB</text>'
                )
                y += bar_h + gap
            used_cpu, used_mem = group.cpu_units_used, group.memory_mib_used
            cpu = f"CPU {used_cpu} / {cap.host_cpu_units} units"
            memory = f"memory {used_mem} / {cap.host_memory_mib} MiB"
            half = bar_w // 2 - 4
            rows.append(f'<text x="14" y="{y + 6}" font-size="10">{plural} {label}: CPU, memory</text>')
            rows += _share_bar(label_w, y, half, used_cpu, cap.host_cpu_units, cpu)
            rows += _share_bar(label_w + bar_w // 2 + 4, y, half, used_mem, cap.host_memory_mib, memory)
            rows.append(
                f'<text x="{label_w + bar_w + 8}" y="{y + 6}" font-size="10">{escape(cpu)}; {escape(memory)}</text>'
            )
            y += 6 + 2 * gap
        y += gap
    for name, fill in colour.items():  # the legend
        rows.append(f'<rect x="14" y="{y}" width="{bar_h}" height="{bar_h}" fill="{fill}"/>')
        rows.append(f'<text x="{14 + bar_h + 6}" y="{y + 13}">{escape(name)}</text>')
        y += bar_h + gap
    summary = plan.summary
    lines = [
        f"{text.count(summary.instances, 'instance')} (lower bound {summary.instance_lower_bound}), "
        f"{summary.gpus} GPUs; fits: {'yes' if summary.fits else 'no'}. A proof that a placement exists, not where "
        "ECS puts tasks.",
        cost_lines(plan, hint=False)[0],
    ]
    for line in lines:
        rows.append(f'<text x="4" y="{y + 13}">{escape(line)}</text>')
        y += bar_h + gap
    # Wide enough for the longest caption line (about 6.6 px a character at 12 px sans-serif).
    width = max(label_w + bar_w + 330, *(int(len(line) * 6.6) + 10 for line in lines))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 10}" '
        'font-family="sans-serif" font-size="12">\n<title>GPU fleet plan</title>\n' + "\n".join(rows) + "\n</svg>\n"
    )


def _allocation_tip(service: pd.Service | None) -> str:
    note = service.allocation if service is not None else None
    if note is None:
        return ""
    measured = f", measured peak {note.evidence.peak_mib} MiB" if note.evidence else ", not measured (a guess)"
    return f"; needs {note.need_mib} MiB, headroom {note.headroom_mib} MiB{measured}"
