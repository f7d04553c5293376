"""Hot reads whose SQL is compiled once per process: the same query, run with other values.

A read on the payer's path (a link by its code, a session by its id with its link and organization) costs
more to compile than to run: Django builds the SQL, the select list and the related models' layout on every
call, about 1.5 ms of CPU for a three-table read on the reference machine, three times the database's own
time. `CompiledRead` asks Django once per database (alias and vendor) for the query's SQL, its parameters
and its result layout, with marks in place of the values; each later call puts the values in the marks' places,
runs the SQL, applies the fields' converters (decryption, JSON, uint256) and builds the instances as the
ORM's own iterator does (`ModelIterable`: `Model.from_db` and the related models' populators).

Only what the ORM would have returned comes back: the same SQL, the same converters, the same instances. A
queryset whose marks Django transforms (a UUID or integer field, a lookup that wraps its value) cannot be
compiled this way and is refused when first compiled, which the tests of each use exercise.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators  # type: ignore[attr-defined]  # ModelIterable's own

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class _Plan:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[int, ...]  # where each value goes in `params`
    model: type[Model]
    init_list: list[str]
    start: int
    end: int
    converters: list[tuple[int, list[Callable[..., Any]], Any]]
    populators: list[Any]


class CompiledRead(Generic[M]):
    """`build(*values)`'s rows as instances, with its SQL compiled once per database.

    `build` names the read: a queryset filtered by string values (ids, codes) on fields that take a string as
    it is, ordered as the caller wants its rows. `first()` reads one row (`LIMIT 1`), `all()` every row.
    """

    def __init__(self, build: Callable[..., QuerySet[M]], arity: int = 1) -> None:
        self._build = build
        self._arity = arity
        self._plans: dict[tuple[str, str, bool], _Plan] = {}
        self._lock = threading.Lock()

    def first(self, *values: str, using: str = "default") -> M | None:
        found = self._read(values, using, one=True)
        return found[0] if found else None

    def all(self, *values: str, using: str = "default") -> list[M]:
        return self._read(values, using, one=False)

    def _read(self, values: tuple[str, ...], using: str, *, one: bool) -> list[M]:
        if len(values) != self._arity or not all(isinstance(value, str) for value in values):
            raise TypeError(f"a compiled read takes {self._arity} string value(s)")
        connection = connections[using]
        key = (using, connection.vendor, one)
        plan = self._plans.get(key) or self._compile(key)
        params = list(plan.params)
        for slot, value in zip(plan.slots, values, strict=True):
            params[slot] = value
        with connection.cursor() as cursor:
            cursor.execute(plan.sql, params)
            rows = cursor.fetchall()
        instances = []
        for fetched in rows:
            row = list(fetched)
            for position, converters, expression in plan.converters:
                value = row[position]
                for converter in converters:
                    value = converter(value, expression, connection)
                row[position] = value
            instance = plan.model.from_db(using, plan.init_list, row[plan.start : plan.end])
            for populator in plan.populators:
                populator.populate(row, instance)
            instances.append(instance)
        return instances  # type: ignore[return-value]  # instances of the queryset's model

    def _compile(self, key: tuple[str, str, bool]) -> _Plan:
        using, _, one = key
        marks = [f"compiled-read-{secrets.token_hex(8)}" for _ in range(self._arity)]
        try:
            queryset = self._build(*marks).using(using)
            if one:
                queryset = queryset[:1]
            compiler = queryset.query.get_compiler(using=using)
            sql, params = compiler.as_sql()
        except (ValidationError, ValueError) as refused:  # a field that parses its value (a UUID, a number)
            raise ImproperlyConfigured(
                f"{self._build!r}: {refused}; read it through the ORM instead"
            ) from None
        slots = []
        for mark in marks:
            found = [index for index, param in enumerate(params) if param == mark]
            if len(found) != 1:
                raise ImproperlyConfigured(
                    f"{self._build!r}: a value is not passed to the database as it was given (or is passed "
                    "more than once); read it through the ORM instead"
                )
            slots.append(found[0])
        select, klass_info = compiler.select, compiler.klass_info
        if compiler.annotation_col_map or klass_info is None:
            raise ImproperlyConfigured(f"{self._build!r}: only model instances, without annotations")
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        fields = [column[0] for column in select[: compiler.col_count]]
        converters = [
            (position, converter_list, expression)
            for position, (converter_list, expression) in compiler.get_converters(fields).items()
        ]
        plan = _Plan(
            sql=sql,
            params=tuple(params),
            slots=tuple(slots),
            model=klass_info["model"],
            init_list=[column[0].target.attname for column in select[start:end]],
            start=start,
            end=end,
            converters=converters,
            populators=get_related_populators(klass_info, select, using),
        )
        with self._lock:
            self._plans[key] = plan
        return plan
