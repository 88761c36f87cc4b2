"""`dataclasses.dataclass` with `__repr__` and `__eq__` made from shared code instead of generated.

The standard decorator writes each method's source and compiles it, 50-100 µs a method: some 4 ms of every start
for the classes a report loads. These methods do what the generated ones do, to the byte: the same repr (recursion
shown as `...`), the same tuple comparison of the same fields, set in the same cases (a method the class defines
itself is kept; an `eq` class that is not frozen is unhashable). What runs per instance stays generated: `__init__`,
and a frozen class's `__setattr__`, `__eq__` and `__hash__` (its instances are dict keys, hashed per record; the
shared code is ~50 ns a call slower). `order` and `unsafe_hash` go to the standard decorator whole.
"""

from __future__ import annotations

import dataclasses
import operator
from _thread import get_ident
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T", bound=type)


@overload
def dataclass(cls: T, /) -> T: ...


@overload
def dataclass(*, init: bool = True, repr: bool = True, eq: bool = True, order: bool = False,
              unsafe_hash: bool = False, frozen: bool = False, match_args: bool = True, kw_only: bool = False,
              slots: bool = False, weakref_slot: bool = False) -> Callable[[T], T]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: T | None = None, /, *, init: bool = True, repr: bool = True, eq: bool = True,
              order: bool = False, unsafe_hash: bool = False, frozen: bool = False, match_args: bool = True,
              kw_only: bool = False, slots: bool = False, weakref_slot: bool = False) -> Any:
    """`dataclasses.dataclass(cls, ...)` (same arguments, same class), its repr (and eq, not frozen) not compiled."""

    def wrap(cls: Any) -> Any:
        if order or unsafe_hash:
            return dataclasses.dataclass(cls, init=init, repr=repr, eq=eq, order=order, unsafe_hash=unsafe_hash,
                                         frozen=frozen, match_args=match_args, kw_only=kw_only, slots=slots,
                                         weakref_slot=weakref_slot)
        own = cls.__dict__
        class_hash = own.get("__hash__", dataclasses.MISSING)
        explicit_hash = not (class_hash is dataclasses.MISSING or (class_hash is None and "__eq__" in own))
        add_repr, add_eq = repr and "__repr__" not in own, eq and not frozen and "__eq__" not in own
        made: type = dataclasses.dataclass(cls, init=init, repr=False, eq=eq and frozen, frozen=frozen,
                                           match_args=match_args, kw_only=kw_only, slots=slots,
                                           weakref_slot=weakref_slot)
        fields = dataclasses.fields(made)
        if add_repr:
            _name(made, _repr([f.name for f in fields if f.repr]), "__repr__")
        if add_eq:
            _name(made, _eq(_values([f.name for f in fields if f.compare])), "__eq__")
        if eq and not frozen and not explicit_hash:
            made.__hash__ = None  # type: ignore[assignment]
        return made

    return wrap if cls is None else wrap(cls)


def _name(cls: type, method: Callable[..., Any], name: str) -> None:
    method.__name__, method.__qualname__ = name, f"{cls.__qualname__}.{name}"
    setattr(cls, name, method)


def _values(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of these attributes (the generated `__eq__` compares a tuple, one of one field too)."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _repr(names: list[str]) -> Callable[[Any], str]:
    running: set[tuple[int, int]] = set()

    def __repr__(self: Any) -> str:
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"
        finally:
            running.discard(key)

    return __repr__


def _eq(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__

