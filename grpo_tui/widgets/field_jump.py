"""Go to a field of the new-run form by typing part of its name (``ctrl+g``): the form has some fifty fields in
collapsed groups, and a user who wants ``lr`` should not tab through twenty-five others to reach it.

A command palette of its own, fed by ``FieldCommands``: each field is a hit by its name, with its group and the
first line of its help (the same text as ``--help``); choosing one opens its group and focuses its input.
"""

from __future__ import annotations

from textual.command import DiscoveryHit, Hit, Hits, Provider

from ..config_flags import GROUP_TITLES
from .config_form import ConfigForm


class FieldCommands(Provider):
    """The form's fields as palette hits; the screen it was opened from must hold a ``ConfigForm``."""

    def _fields(self):
        form = self.screen.query_one(ConfigForm)
        for spec in form.specs:
            first = (spec.help or "").split(". ")[0].splitlines()[0] if spec.help else ""
            yield form, spec.name, f"{GROUP_TITLES.get(spec.group, spec.group)}: {first}"

    async def discover(self) -> Hits:
        for form, name, help_text in self._fields():
            yield DiscoveryHit(name, lambda n=name, f=form: f.focus_field(n), text=name, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for form, name, help_text in self._fields():
            score = matcher.match(name)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(name), lambda n=name, f=form: f.focus_field(n), text=name, help=help_text
                )
