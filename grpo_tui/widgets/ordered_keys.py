"""Text fields whose editing keys act in the order they were typed, however fast (a paste-speed burst included).

Textual (8.x) hands a printable key straight to the focused Input or TextArea, which inserts it at once, but a
bound key (backspace, delete, the arrows, home, end, ctrl+…) is not handled there: the key event bubbles up
through every ancestor's message queue to the App, which only then runs the field's binding. In the launch
form a field sits seven widgets deep, so keys typed quickly overtake a backspace still in transit: deleting
"-1e-5" and typing "4e-5" inserts "4" after "-1e-5" (and refuses the rest, which make no number there), then the
late backspaces delete what was typed, leaving "-1", "4" or nothing (issue 44; Textual #6605, whose open fix
runs a field's own bindings inline in the same way).

``OrderedInput`` and ``OrderedTextArea`` run the field's own (non-priority) bindings when its key arrives, before any later key: the
same binding and action the App would have run, as the App runs priority bindings before the key reaches the
field. Keys the field does not bind bubble on as before.
"""

from __future__ import annotations

from textual import events
from textual.widget import Widget
from textual.widgets import Input, TextArea


async def run_own_binding(field: Widget, event: events.Key) -> None:
    """Run ``field``'s own binding of a non-printable key now; a key it ran goes no further.

    Textual calls the ``_on_key`` of every class of a widget's MRO, the subclass's first; ``prevent_default`` keeps
    the field's own handler (and the bubbling to the App) from seeing the key again."""
    if event.is_printable:
        return
    for binding in field._bindings.key_to_bindings.get(event.key, ()):
        if not binding.priority and await field.app.run_action(binding.action, field):
            event.stop()
            event.prevent_default()
            return


class OrderedInput(Input):
    """An Input whose backspace, delete and cursor keys keep their place among the characters typed."""

    async def _on_key(self, event: events.Key) -> None:
        await run_own_binding(self, event)


class OrderedTextArea(TextArea):
    """A TextArea whose bound editing keys keep their place among the characters typed."""

    async def _on_key(self, event: events.Key) -> None:
        await run_own_binding(self, event)


__all__ = ["OrderedInput", "OrderedTextArea", "run_own_binding"]
