"""Two lines that say how a run stands: id, name and tags, model, status; step/total, elapsed, ETA, speed."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from trainer_core.contract.run.status import Status

from ..formatting import format_duration, short_model
from ..palette import app_palette
from ..safe_text import clean_line


class RunHeader(Widget):
    """Fixed size, redrawn in place: updating it never re-runs the screen's layout."""

    DEFAULT_CSS = """
    RunHeader { height: 2; width: 1fr; background: $panel; padding: 0 1; }
    """
    text = Text()

    def render(self) -> Text:
        return self.text

    def show(
        self,
        run_id: str,
        model: str | None,
        status: str,
        step: int | None,
        total: int | None,
        elapsed: float | None,
        steps_per_s: float | None,
        tokens_per_s: float | None,
        label: str = "",
    ) -> None:
        """``label``: the run's name and tags (``runs_table.run_label``), shown literally after its id."""
        text = Text()
        text.append(clean_line(run_id), style="bold")
        if label:
            text.append(f"  {clean_line(label)}", style="italic")
        text.append(f"  {clean_line(short_model(model, 28))}  ")
        text.append(clean_line(status).upper(), style=app_palette(self.app).status(status, bold=True))
        text.append(f"\nstep {step or 0}/{total or '?'}")
        text.append(f"  {format_duration(elapsed)}")
        if steps_per_s and total and step is not None and status == Status.RUNNING:
            text.append(f"  ETA {format_duration(max(total - step, 0) / steps_per_s)}")
        if steps_per_s:
            text.append(f"  {steps_per_s:.2f} steps/s")
        if tokens_per_s:
            text.append(f"  {tokens_per_s:,.0f} tok/s")
        text.no_wrap = True
        text.overflow = "ellipsis"
        if text.plain != self.text.plain:
            self.text = text
            self.refresh()
