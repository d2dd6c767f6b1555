"""Import resolution explained: who answered each import, who was shadowed,
what is missing and why.

An :class:`ImportReport` is what ``Imports.explain`` (elfkit's providers),
``elfkit inspect FILE --imports-from …`` and vmrt's plugin manager return,
and what the missing-import errors carry after their first line.  It only
describes; binding is done by the loader (``Imports.resolve``) and vmrt's
plugin manager.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from .._support.records import DataRecord, field

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class ProviderNote(DataRecord, frozen=True, slots=True):
    """A provider as the report lists it: ``label``, ``refused`` (why it
    could not serve this code at all; empty when it could) and ``asked``
    (False when, refused, it was not even asked which names it has)."""

    label: str
    refused: str = ""
    asked: bool = True


class ImportAnswer(DataRecord, frozen=True, slots=True):
    """One import.  ``provider``: the index (into ``ImportReport.providers``,
    newest first) of the provider that answered, or None; ``shadowed``: the
    older providers that have it too; ``refused``: providers that have it
    but cannot serve this code (index, reason)."""

    name: str
    optional: bool
    provider: int | None
    shadowed: tuple[int, ...] = ()
    refused: tuple[tuple[int, str], ...] = ()

    @property
    def missing(self) -> bool:
        """A required import no provider answered."""
        return self.provider is None and not self.optional


class ImportReport(DataRecord):
    """Every import of ``subject`` and its answer, providers newest first."""

    subject: str
    providers: list[ProviderNote]
    answers: list[ImportAnswer] = field(default_factory=list)
    #: what an unanswered optional import becomes ("left 0" for ELF weak symbols)
    optional_outcome: str = "left 0 (weak)"

    @classmethod
    def build(cls, subject: str, providers: Sequence[ProviderNote],
              imports: Sequence[tuple[str, bool]], has: Mapping[int, set[str]],
              optional_outcome: str = "left 0 (weak)") -> ImportReport:
        """Answer ``imports`` ((name, optional) pairs) from ``has`` (provider
        index -> the names it has); a provider with ``refused`` set answers
        nothing and is named for the names it has."""
        answers = []
        for name, optional in imports:
            holders = [i for i in range(len(providers)) if name in has.get(i, ())]
            serving = [i for i in holders if not providers[i].refused]
            refused = tuple((i, providers[i].refused) for i in holders if providers[i].refused)
            answers.append(ImportAnswer(name, optional, serving[0] if serving else None,
                                        tuple(serving[1:]), refused))
        return cls(subject, list(providers), answers, optional_outcome)

    @property
    def missing(self) -> list[str]:
        return [a.name for a in self.answers if a.missing]

    def format(self) -> str:
        """The report as text: the providers (numbered, newest first), then
        one line per import."""
        lines = [f"{self.subject}: {len(self.answers)} import(s), providers searched newest first:"]
        if not self.providers:
            lines.append("  (no providers)")
        for i, p in enumerate(self.providers):
            state = "" if not p.refused else \
                f"  (cannot serve: {p.refused})" if p.asked else f"  (skipped: {p.refused})"
            lines.append(f"  [{i + 1}] {p.label}{state}")
        width = max((len(a.name) for a in self.answers), default=0)
        for a in self.answers:
            lines.append(f"  {a.name:<{width}}  {self._answer(a)}")
        return "\n".join(lines)

    def _answer(self, a: ImportAnswer) -> str:
        if a.provider is not None:
            text = f"<- [{a.provider + 1}] {self.providers[a.provider].label}"
            if a.shadowed:
                text += "; shadows " + ", ".join(f"[{i + 1}]" for i in a.shadowed)
            return text
        text = self.optional_outcome if a.optional else "MISSING (required)"
        why = [f"[{i + 1}] has it, but {reason}" for i, reason in a.refused]
        why += [f"[{i + 1}] skipped: {p.refused}" for i, p in enumerate(self.providers)
                if not p.asked]
        return f"{text}: {'; '.join(why) or 'no provider has it'}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-able: providers (label, refused) and per import its answer."""
        label = [p.label for p in self.providers]
        return {
            "subject": self.subject,
            "providers": [{"label": p.label, "refused": p.refused} for p in self.providers],
            "imports": [{"name": a.name, "optional": a.optional,
                         "provider": None if a.provider is None else label[a.provider],
                         "shadowed": [label[i] for i in a.shadowed],
                         "refused": [{"provider": label[i], "reason": r}
                                     for i, r in a.refused],
                         "missing": a.missing} for a in self.answers],
        }
