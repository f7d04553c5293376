"""Every status column's state machine, declared: the statuses, the moves allowed between them, the event each
announces on entering it, and the conditional update that makes a move.

A model's status changes only through its machine: `machine.move(rows, to=..., from_=...)` is the conditional
update (`UPDATE … SET status = to WHERE … AND status IN from_`: of two workers racing, one moves the row and
the other is told it did not), after checking that every move it may make is declared; `machine.enter(row,
to)` checks the move of a row about to be saved. A move the table does not list raises `ForbiddenTransition`:
a bug in the caller, never a payer's doing. `manage.py states` prints every machine, and docs/architecture.md
includes the printout under a test.

    REFUND = Machine(
        "refunds.Refund.status",
        moves={"requires_funding": {"pending", "canceled"}, "pending": {"succeeded", "failed"}, ...},
        initial=("requires_funding", "pending"),
        announces={"succeeded": "refund.updated"},
    )
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Model, QuerySet


class ForbiddenTransition(RuntimeError):
    """A move a state machine does not list: a bug in the caller."""


@dataclass(frozen=True)
class Machine:
    """The statuses of `column` (`app.Model.field`) and the moves between them."""

    column: str
    moves: Mapping[str, Iterable[str]]  # every status -> the statuses it may move to (none: final)
    initial: tuple[str, ...]  # where a row starts
    announces: Mapping[str, str] = field(default_factory=dict)  # status -> what entering it announces
    meanings: Mapping[str, str] = field(default_factory=dict)  # status -> what it means, for the docs

    def __post_init__(self) -> None:
        moves = {str(status): frozenset(str(s) for s in to) for status, to in self.moves.items()}
        unknown = {s for to in moves.values() for s in to} - moves.keys()
        if unknown or not set(self.initial) <= moves.keys():
            raise ValueError(
                f"{self.column}: {sorted(unknown | (set(self.initial) - moves.keys()))} not declared"
            )
        object.__setattr__(self, "moves", moves)

    @property
    def statuses(self) -> list[str]:
        return list(self.moves)

    @property
    def final(self) -> frozenset[str]:
        return frozenset(status for status, to in self.moves.items() if not to)

    def allows(self, from_status: str, to_status: str) -> bool:
        return to_status in self.moves.get(from_status, ())

    def check(self, from_status: str, to_status: str) -> None:
        """ForbiddenTransition unless the machine lists `from_status -> to_status` (staying in a status is no
        move: an update of a row's other fields)."""
        if from_status not in self.moves or (
            from_status != to_status and not self.allows(from_status, to_status)
        ):
            raise ForbiddenTransition(f"{self.column} does not move from {from_status} to {to_status}")

    def sources(self, to_status: str) -> list[str]:
        """Every status that may move to `to_status`."""
        return [status for status, to in self.moves.items() if to_status in to]

    def move(self, rows: QuerySet, *, to: str, from_: Iterable[str] | None = None, **fields: Any) -> int:
        """Move the rows of `rows` that are in one of `from_` (by default: every status that may move to `to`)
        to `to`, setting `fields` with it, in one conditional update; how many moved."""
        sources = list(from_) if from_ is not None else self.sources(to)
        for status in sources:
            self.check(status, to)
        return rows.filter(status__in=sources).update(status=to, **fields)

    def enter(self, row: Model, to: str) -> None:
        """Set `row`'s status to `to` (for the caller to save) after checking the move; a row not saved yet
        enters one of the initial statuses."""
        current = getattr(row, "status", "")
        if row._state.adding:
            if to not in self.initial:
                raise ForbiddenTransition(f"{self.column} does not start as {to}")
        else:
            self.check(current, to)
        row.status = to  # type: ignore[attr-defined]

    def markdown(self) -> str:
        """The machine as docs/architecture.md shows it."""
        lines = [f"`{self.column}` (starts as {', '.join(f'`{s}`' for s in self.initial)})", ""]
        lines += ["| status | may move to | announces | meaning |", "|---|---|---|---|"]
        for status, to in self.moves.items():
            where = ", ".join(f"`{s}`" for s in sorted(to)) or "(final)"
            lines.append(
                f"| `{status}` | {where} | {self.announces.get(status) or '-'} | {self.meanings.get(status, '')} |"
            )
        return "\n".join(lines)
