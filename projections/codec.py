"""Typed values as plain JSON data and back, checked against their types on the way in.

A `Codec` is built once per type from its annotation (`codec_for(dict[StepId, StepState])`)
and converts a whole batch of values at a time: a batch of dataclasses becomes one column
per field, a batch of lists one list of lengths and one column of all their items, so a
checkpoint of 100,000 steps is a handful of flat lists, each written and checked in one
pass, not 100,000 objects walked one by one. Dataclasses are read from their own fields
(`dataclasses.fields` and their type hints): a field added to a state is saved and checked
with no second list to keep.

Decoding builds only what the annotation names — str, int, bool, None, Literal, NewType,
datetime, `array` (of 64-bit ints), tuple, list, set, frozenset, dict and dataclasses — and
refuses anything else with a `CodecError` naming where in the data it is. Nothing in the
data chooses a type or runs code.
"""

import dataclasses
import sys
import types
from abc import ABC, abstractmethod
from array import array
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from itertools import accumulate, chain, pairwise
from operator import attrgetter
from typing import Any, Literal, NewType, Union, get_args, get_origin, get_type_hints

# What json.dumps takes and json.loads gives back: lists, dicts, str, int, bool, None.
Data = Any
NONE_TYPE = type(None)


class CodecError(ValueError):
    """Data that is not a batch of values of the type it should hold; says where."""


class Codec(ABC):
    """Converts batches of values of one type to JSON data and back."""

    description: str  # the type spelled out: same description, same data

    @abstractmethod
    def encode_many(self, values: Sequence[Any]) -> Data:
        """The data of a batch of values."""

    @abstractmethod
    def decode_many(self, data: Data, where: str) -> list[Any]:
        """The values of a batch's data (CodecError, naming `where`, when it is not one)."""

    def encode(self, value: Any) -> Data:
        return self.encode_many([value])

    def decode(self, data: Data, where: str = "") -> Any:
        values = self.decode_many(data, where or self.description)
        if len(values) != 1:
            raise CodecError(f"{where}: {len(values)} values where one was saved")
        return values[0]


def _list_of(data: Data, allowed: frozenset[type], where: str, what: str) -> list[Any]:
    """`data` itself, once it is a list whose items are all of the allowed types."""
    if type(data) is not list:
        raise CodecError(f"{where}: expected a list of {what}, found {type(data).__name__}")
    found = set(map(type, data))  # one pass in C: the check costs little beside the parse
    if not found <= allowed:
        wrong = ", ".join(sorted(t.__name__ for t in found - allowed))
        raise CodecError(f"{where}: expected {what}, found {wrong}")
    return data


class Scalar(Codec):
    """A codec whose batch is a flat list holding one JSON scalar (never null) per value."""


class Plain(Scalar):
    """str, int or bool: stored as themselves (a bool is not an int here, nor an int a
    bool)."""

    def __init__(self, kind: type) -> None:
        self.kind, self.description = kind, kind.__name__
        self._allowed = frozenset({kind})

    def encode_many(self, values: Sequence[Any]) -> Data:
        return list(values)

    def decode_many(self, data: Data, where: str) -> list[Any]:
        return _list_of(data, self._allowed, where, self.description)


class Name(Plain):
    """A `NewType` of str (a step's, a session's or a plan's id): one string object per
    distinct name, as the fold left them, rather than one per mention in the data (an id
    is mentioned by a dozen tables; unshared, a restored view took a third more memory)."""

    def __init__(self, name: str) -> None:
        super().__init__(str)
        self.description = name

    def decode_many(self, data: Data, where: str) -> list[Any]:
        return list(map(sys.intern, super().decode_many(data, where)))


class OneOf(Scalar):
    """A `Literal[...]` of strings or ints: one of its values, nothing else."""

    def __init__(self, choices: tuple[Any, ...]) -> None:
        self.choices = {choice: choice for choice in choices}
        self._allowed = frozenset(map(type, choices))
        self.description = f"Literal[{', '.join(map(repr, choices))}]"

    def encode_many(self, values: Sequence[Any]) -> Data:
        return list(values)

    def decode_many(self, data: Data, where: str) -> list[Any]:
        values = _list_of(data, self._allowed, where, self.description)
        try:  # the choices' own objects, not a copy of each per value
            return list(map(self.choices.__getitem__, values))
        except KeyError as missing:
            raise CodecError(f"{where}: {missing} is not among {self.description}") from None


class Moment(Scalar):
    """A datetime, as ISO 8601 text with its UTC offset (none for a naive one)."""

    description = "datetime"
    _allowed = frozenset({str})

    def encode_many(self, values: Sequence[Any]) -> Data:
        return [value.isoformat() for value in values]

    def decode_many(self, data: Data, where: str) -> list[Any]:
        try:
            return list(map(datetime.fromisoformat, _list_of(data, self._allowed, where,
                                                             "ISO 8601 datetimes")))
        except ValueError as error:
            raise CodecError(f"{where}: {error}") from None


class OrNone(Scalar):
    """A scalar or None: null in the same flat list."""

    def __init__(self, inner: Scalar) -> None:
        self.inner, self.description = inner, f"{inner.description} | None"

    def encode_many(self, values: Sequence[Any]) -> Data:
        encoded = iter(self.inner.encode_many([v for v in values if v is not None]))
        return [None if value is None else next(encoded) for value in values]

    def decode_many(self, data: Data, where: str) -> list[Any]:
        if type(data) is not list:
            raise CodecError(f"{where}: expected a list, found {type(data).__name__}")
        decoded = iter(self.inner.decode_many([d for d in data if d is not None], where))
        return [None if item is None else next(decoded) for item in data]


def _lengths(data: Data, where: str) -> list[int]:
    lengths = _list_of(data, frozenset({int}), where, "lengths")
    if lengths and min(lengths) < 0:
        raise CodecError(f"{where}: a negative length")
    return lengths


def _spans(lengths: list[int], total: int, where: str) -> list[tuple[int, int]]:
    """(start, end) of each value's items in the column of all items."""
    ends = list(accumulate(lengths, initial=0))
    if ends[-1] != total:
        raise CodecError(f"{where}: lengths add up to {ends[-1]}, {total} items saved")
    return list(pairwise(ends))


def _pair(data: Data, size: int, where: str) -> list[Any]:
    if type(data) is not list or len(data) != size:
        raise CodecError(f"{where}: expected a list of {size} columns")
    return data


class Many(Codec):
    """list, set, frozenset or tuple[X, ...]: [the lengths, one column of every item]."""

    def __init__(self, make: type, inner: Codec) -> None:
        self.make, self.inner = make, inner
        self.description = f"{make.__name__}[{inner.description}]"

    def encode_many(self, values: Sequence[Any]) -> Data:
        return [list(map(len, values)), self.inner.encode_many(list(chain.from_iterable(values)))]

    def decode_many(self, data: Data, where: str) -> list[Any]:
        lengths, items = _pair(data, 2, where)
        lengths = _lengths(lengths, f"{where} (lengths)")
        items = self.inner.decode_many(items, f"{where}[]")
        make, spans = self.make, _spans(lengths, len(items), where)
        if make is list:  # a slice is a new list already
            return [items[start:end] for start, end in spans]
        values = [make(items[start:end]) for start, end in spans]
        if make is set or make is frozenset:
            for value, length in zip(values, lengths, strict=True):
                if len(value) != length:
                    raise CodecError(f"{where}: a set saved with repeated items")
        return values


class Positions(Codec):
    """An `array` of 64-bit ints (the view's log positions): [the lengths, every int]."""

    description = "array[q]"

    def encode_many(self, values: Sequence[Any]) -> Data:
        return [list(map(len, values)), list(chain.from_iterable(values))]

    def decode_many(self, data: Data, where: str) -> list[Any]:
        lengths, items = _pair(data, 2, where)
        lengths = _lengths(lengths, f"{where} (lengths)")
        try:  # one array for all, then slices of it: each a copy made in C
            every = array("q", _list_of(items, frozenset({int}), f"{where}[]", "int"))
        except OverflowError as error:
            raise CodecError(f"{where}: {error}") from None
        return [every[start:end] for start, end in _spans(lengths, len(every), where)]


class DictOf(Codec):
    """dict[K, V]: [the lengths, one column of every key, one of every value]."""

    def __init__(self, keys: Codec, values: Codec) -> None:
        self.keys, self.values = keys, values
        self.description = f"dict[{keys.description}, {values.description}]"

    def encode_many(self, values: Sequence[Any]) -> Data:
        return [list(map(len, values)),
                self.keys.encode_many(list(chain.from_iterable(values))),
                self.values.encode_many(list(chain.from_iterable(map(dict.values, values))))]

    def decode_many(self, data: Data, where: str) -> list[Any]:
        lengths, keys, items = _pair(data, 3, where)
        lengths = _lengths(lengths, f"{where} (lengths)")
        keys = self.keys.decode_many(keys, f"{where} (keys)")
        items = self.values.decode_many(items, f"{where}[]")
        if len(keys) != len(items):
            raise CodecError(f"{where}: {len(keys)} keys for {len(items)} values")
        values = [dict(zip(keys[start:end], items[start:end], strict=True))
                  for start, end in _spans(lengths, len(keys), where)]
        for value, length in zip(values, lengths, strict=True):
            if len(value) != length:
                raise CodecError(f"{where}: a dict saved with a repeated key")
        return values


def _same_lengths(columns: list[list[Any]], where: str) -> None:
    if len({len(column) for column in columns}) > 1:
        raise CodecError(f"{where}: columns of different lengths")


class Fixed(Codec):
    """tuple[X, Y, ...] of a fixed size: one column per place."""

    def __init__(self, places: tuple[Codec, ...]) -> None:
        self.places = places
        self.description = f"tuple[{', '.join(p.description for p in places)}]"

    def encode_many(self, values: Sequence[Any]) -> Data:
        columns = list(zip(*values, strict=True)) if values else [()] * len(self.places)
        return [place.encode_many(column)
                for place, column in zip(self.places, columns, strict=True)]

    def decode_many(self, data: Data, where: str) -> list[Any]:
        columns = [place.decode_many(column, f"{where}[{at}]") for at, (place, column)
                   in enumerate(zip(self.places, _pair(data, len(self.places), where),
                                    strict=True))]
        _same_lengths(columns, where)
        return list(zip(*columns, strict=True))


class Record(Codec):
    """An object of named, typed attributes (a dataclass, or the read model's view): one
    column per attribute, under its name. `build` makes one from its attributes' values,
    in the order given."""

    def __init__(self, name: str, attributes: dict[str, Codec],
                 build: Callable[..., Any]) -> None:
        self.attributes, self.build = attributes, build
        self._read = [attrgetter(attribute) for attribute in attributes]
        self.description = name + "{" + ", ".join(
            f"{attribute}: {codec.description}" for attribute, codec in attributes.items()) + "}"

    def encode_many(self, values: Sequence[Any]) -> Data:
        return {attribute: codec.encode_many(list(map(read, values)))
                for (attribute, codec), read in zip(self.attributes.items(), self._read,
                                                    strict=True)}

    def decode_many(self, data: Data, where: str) -> list[Any]:
        if type(data) is not dict or data.keys() != self.attributes.keys():
            found = sorted(data) if type(data) is dict else type(data).__name__
            raise CodecError(f"{where}: expected the attributes {list(self.attributes)}, "
                             f"found {found}")
        columns = [codec.decode_many(data[attribute], f"{where}.{attribute}")
                   for attribute, codec in self.attributes.items()]
        _same_lengths(columns, where)
        return list(map(self.build, *columns))


def record_of(cls: type, build: Callable[..., Any] | None = None) -> Record:
    """The codec of a class's annotated attributes (a dataclass: its fields), built with
    `build` (a dataclass: its own constructor, every field passed in order)."""
    hints = get_type_hints(cls)
    if dataclasses.is_dataclass(cls):
        fields = dataclasses.fields(cls)
        if not all(field.init for field in fields):
            raise TypeError(f"{cls.__name__}: a field outside __init__ cannot be restored")
        names = [field.name for field in fields]
    else:
        names = list(hints)
    return Record(cls.__name__, {name: codec_for(hints[name]) for name in names},
                  build or cls)


@cache
def codec_for(kind: Any) -> Codec:
    """The codec of the type `kind` (TypeError for a type it cannot keep)."""
    if kind in (str, int, bool):
        return Plain(kind)
    if kind is datetime:
        return Moment()
    if kind is array:
        return Positions()
    if isinstance(kind, NewType):
        inner = codec_for(kind.__supertype__)
        return Name(kind.__name__) if isinstance(inner, Plain) and inner.kind is str else inner
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return record_of(kind)
    origin, args = get_origin(kind), get_args(kind)
    if origin is Literal:
        return OneOf(args)
    if origin in (Union, types.UnionType) and len(args) == 2 and NONE_TYPE in args:
        inner = codec_for(args[0] if args[1] is NONE_TYPE else args[1])
        if isinstance(inner, Scalar):
            return OrNone(inner)
    if origin in (list, set, frozenset) and len(args) == 1:
        return Many(origin, codec_for(args[0]))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return Many(tuple, codec_for(args[0]))
    if origin is tuple and args:
        return Fixed(tuple(codec_for(arg) for arg in args))
    if origin is dict and len(args) == 2:
        return DictOf(codec_for(args[0]), codec_for(args[1]))
    raise TypeError(f"no codec for {kind!r}")
