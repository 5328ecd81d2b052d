"""The reward-inspection report as Rich renderables: flags first, then numbers, histogram and samples.

Shared by ``grpo-tui inspect`` and the app's Inspect screen so both say the same thing. "No problems found"
is said only of a report that scored something: an inspection that crashed or scored nothing is a failure, shown
with the end of its log (``failure_report``), never as a pass.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from .palette import Palette, plain_palette
from .safe_text import clean, literal


def flags_text(summary: dict, palette: Palette) -> Text:
    text = Text()
    if summary.get("failed"):
        text.append("The inspection failed: ", style=palette.role("error", bold=True))
        text.append(clean(summary.get("error", "")) + "\n")
        return text
    flags = summary.get("flags", [])
    if not flags and summary.get("scored"):
        text.append(
            "No problems found: scores vary within groups and the model sometimes succeeds.\n",
            style=palette.role("success"),
        )
    for f in flags:
        text.append(clean(f"{f['severity'].upper():8} {f['flag']}: "), style=palette.severity(f["severity"]))
        text.append(clean(f["message"]) + "\n")
    return text


def numbers_table(summary: dict) -> Table:
    table = Table(title="scores", title_justify="left", box=None, pad_edge=False, show_header=False)
    table.add_column(style="bold")
    table.add_column()

    def fmt(value, pattern="{:.3f}"):
        return "-" if value is None else pattern.format(value)

    zero, groups = summary.get("zero_spread_groups", 0), summary.get("groups", 0)
    rows = [
        (
            "completions",
            f"{summary.get('scored', 0)} scored of {summary.get('samples', 0)} ({summary.get('errors', 0)} errors)",
        ),
        ("mean ± std", f"{fmt(summary.get('mean'))} ± {fmt(summary.get('std'))}"),
        ("min / max", f"{fmt(summary.get('min'))} / {fmt(summary.get('max'))}"),
        ("success rate (score > 0)", fmt(summary.get("success_rate"), "{:.0%}")),
        ("groups with zero spread", f"{zero} of {groups}" + (f" ({zero / groups:.0%})" if groups else "")),
    ]
    for name, value in rows:
        table.add_row(name, literal(value))
    return table


def histogram(summary: dict, width: int = 30) -> Table:
    counts = summary.get("histogram") or [0] * 10
    peak = max(counts) or 1
    table = Table(title="score distribution", title_justify="left", box=None, pad_edge=False, show_header=False)
    table.add_column(justify="right")
    table.add_column()
    table.add_column(justify="right")
    for i, count in enumerate(counts):
        table.add_row(f"{i / 10:.1f}-{(i + 1) / 10:.1f}", "█" * round(width * count / peak), str(count))
    return table


def samples_table(records: list[dict], palette: Palette, limit: int = 20, width: int = 50) -> Table:
    table = Table(title=f"samples (first {min(limit, len(records))} of {len(records)})", title_justify="left")
    for name in ("#", "score", "prompt", "completion", "columns"):
        table.add_column(
            name,
            overflow="ellipsis",
            no_wrap=name != "completion",
            min_width=24 if name == "completion" else None,
            max_width=30 if name in ("prompt", "columns") else None,
        )
    for r in records[:limit]:
        score = r.get("score")
        shown = literal(str(r.get("error", "?"))[:60], style=palette.role("error")) if score is None else f"{score:.3f}"
        prompt = " ".join(str(r.get("prompt", "")).split())[-width:]
        columns = ", ".join(f"{k}={v}" for k, v in (r.get("columns") or {}).items())
        completion = " ".join(str(r.get("completion", "")).split())[: width * 2]
        table.add_row(
            literal(r.get("prompt_index")), shown, literal(prompt), literal(completion), literal(columns[:60])
        )
    return table


def report(summary: dict, records: list[dict], palette: Palette | None = None) -> Group:
    """The report; ``palette``: the app's theme colours (default: the default theme's, for plain output)."""
    palette = palette or plain_palette()
    parts = [flags_text(summary, palette)]
    if not summary.get("failed"):
        parts += [numbers_table(summary), histogram(summary), samples_table(records, palette)]
    return Group(*parts)


def failure_report(
    reason: str, log_lines: list[str], summary: dict, records: list[dict], palette: Palette | None = None
) -> Group:
    """An inspection that is no pass: why, the flags and samples it has (the first errors), and the last lines of
    its log, every one of them literal text."""
    palette = palette or plain_palette()
    text = Text()
    text.append("The inspection failed: ", style=palette.role("error", bold=True))
    text.append(clean(reason) + "\n")
    last = next((line for line in reversed(log_lines) if line.strip()), None)
    if last is not None:  # a traceback's last line says what went wrong
        text.append("Its log ends with: ", style="bold")
        text.append(clean(last.strip()) + "\n")
    parts: list = [text]
    if summary.get("flags"):
        parts.append(flags_text(summary, palette))
    if records:
        parts.append(samples_table(records, palette))
    if log_lines:
        parts.append(Text("The end of inspect.log:", style="bold"))
        parts.extend(literal(line) for line in log_lines)
    else:
        parts.append(Text("inspect.log is empty."))
    return Group(*parts)
