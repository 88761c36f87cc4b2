"""The lean dataclass decorator makes the classes the standard one makes: the same repr, equality and hash."""

from __future__ import annotations

import dataclasses
import itertools
import pickle
import re
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from latencymap.core import lean

NAN = float("nan")


def shapes() -> dict[str, Callable[[Callable[..., Any]], tuple[type, list[tuple[Any, ...]]]]]:
    """Class bodies (made by `decorate`) with the arguments of a few instances each."""

    def plain(decorate: Callable[..., Any]) -> tuple[type, list[tuple[Any, ...]]]:
        @decorate
        class Plain:
            a: int
            b: str = "x"
            c: list[int] = dataclasses.field(default_factory=list)
        return Plain, [(1,), (1, "x"), (2, "y", [1]), (1, "x", [2])]

    def one(decorate: Callable[..., Any]) -> tuple[type, list[tuple[Any, ...]]]:
        @decorate
        class One:
            v: float
        return One, [(1.0,), (NAN,), (2.0,)]

    def none(decorate: Callable[..., Any]) -> tuple[type, list[tuple[Any, ...]]]:
        @decorate
        class Empty:
            k: ClassVar[int] = 3
        return Empty, [(), ()]

    def hidden(decorate: Callable[..., Any]) -> tuple[type, list[tuple[Any, ...]]]:
        @decorate
        class Hidden:
            a: int
            secret: str = dataclasses.field(default="s", repr=False)
            noise: int = dataclasses.field(default=0, compare=False)
            tag: str = dataclasses.field(default="t", hash=False)
            keyed: int = dataclasses.field(default=0, compare=False, hash=True)
        return Hidden, [(1,), (1, "z"), (1, "s", 5), (1, "s", 0, "u"), (1, "s", 0, "t", 9)]

    def own(decorate: Callable[..., Any]) -> tuple[type, list[tuple[Any, ...]]]:
        @decorate
        class Own:
            a: int

            def __repr__(self) -> str:
                return f"own {self.a}"

            def __eq__(self, other: object) -> bool:
                return isinstance(other, Own) and other.a % 2 == self.a % 2
        return Own, [(1,), (3,), (2,)]

    def own_hash(decorate: Callable[..., Any]) -> tuple[type, list[tuple[Any, ...]]]:
        @decorate
        class OwnHash:
            a: int

            def __hash__(self) -> int:
                return 7
        return OwnHash, [(1,), (2,)]

    def child(decorate: Callable[..., Any]) -> tuple[type, list[tuple[Any, ...]]]:
        @decorate
        class Base:
            a: int

        @decorate
        class Child(Base):
            b: int = 0
        return Child, [(1,), (1, 2)]

    return {"plain": plain, "one": one, "none": none, "hidden": hidden, "own": own, "own_hash": own_hash,
            "child": child}


OPTIONS = [dict(zip(("frozen", "slots", "eq", "repr"), bits, strict=True))
           for bits in itertools.product((False, True), repeat=4)]


def attempt(fn: Callable[[], Any]) -> Any:
    """What `fn` gives, or the name of the exception it raises."""
    try:
        return fn()
    except Exception as err:
        return f"{type(err).__name__}: {err}"


def behaviour(cls: type, args: list[tuple[Any, ...]]) -> list[Any]:
    """Everything the generated methods decide, with the class's own name and the objects' addresses taken out."""
    objs = [cls(*a) for a in args] + [cls(*a) for a in args]
    seen: list[Any] = [cls.__hash__ is None, cls.__hash__ is object.__hash__, "__eq__" in cls.__dict__,
                       "__repr__" in cls.__dict__]
    seen += [re.sub(r" at 0x[0-9a-f]+", "", repr(o)).replace(cls.__qualname__, "C") for o in objs]
    seen += [[x == y for y in objs] for x in objs] + [[x != y for y in objs] for x in objs]
    seen += [o == object() for o in objs] + [o.__eq__(object()) for o in objs]
    if cls.__hash__ is not None and cls.__hash__ is not object.__hash__:
        seen += [attempt(lambda o=o: hash(o)) for o in objs]
    seen.append([dataclasses.astuple(o) for o in objs])
    seen.append(attempt(lambda: setattr(objs[0], "a", 5)))
    seen.append(attempt(lambda: delattr(objs[0], "a")))
    return seen


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(k for k, v in o.items() if v) or "default")
@pytest.mark.parametrize("shape", sorted(shapes()))
def test_the_lean_class_behaves_as_the_standard_one(shape: str, options: dict[str, bool]) -> None:
    make = shapes()[shape]
    standard, args = make(dataclasses.dataclass(**options))
    ours, same_args = make(lean.dataclass(**options))
    assert behaviour(ours, same_args) == behaviour(standard, args)
    assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(standard)]
    assert hasattr(ours, "__slots__") == hasattr(standard, "__slots__")
    assert ours.__match_args__ == standard.__match_args__  # type: ignore[attr-defined]


def test_bare_decorator_order_and_unsafe_hash_and_recursion() -> None:
    @lean.dataclass
    class Node:
        name: str
        children: list[Any] = dataclasses.field(default_factory=list)

    loop = Node("a")
    loop.children.append(loop)
    assert repr(loop) == "test_bare_decorator_order_and_unsafe_hash_and_recursion.<locals>.Node(name='a', " \
                         "children=[...])"
    assert Node.__repr__.__qualname__.endswith("Node.__repr__")

    @lean.dataclass(order=True, unsafe_hash=True)
    class Pair:
        a: int
        b: int

    assert Pair(1, 2) < Pair(1, 3) and hash(Pair(1, 2)) == hash((1, 2)) and Pair(1, 2) == Pair(1, 2)


@lean.dataclass(frozen=True, slots=True)
class Key:
    """Pickled below: a module-level class."""

    label: str
    n: int = 0


def test_instances_pickle_and_key_dicts() -> None:
    k = pickle.loads(pickle.dumps(Key("x", 1)))
    assert k == Key("x", 1) and {Key("x", 1): 2}[k] == 2 and hash(k) == hash(("x", 1))
    assert dataclasses.replace(k, n=2) == Key("x", 2)
