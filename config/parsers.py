"""The API's JSON parser: bounded nesting, bounded integers, no NaN or Infinity.

Python's ``json`` module turns any run of digits into an ``int`` of any size and any
depth of brackets into a recursion: a 400-digit integer then overflows in ``float()``,
numpy or the database, and 100,000 nested brackets exhaust the interpreter's stack.
Both used to surface as a 500 (issue 13, finding 4). Here

- an integer literal longer than :data:`MAX_INT_DIGITS` digits is read as a float
  (``inf`` when it is beyond the float range), so every number that leaves the parser
  fits in a float and the fields' own finiteness and range checks name the problem;
- ``NaN``, ``Infinity`` and ``-Infinity`` literals are refused (they are not JSON);
- nesting deeper than ``settings.API_MAX_JSON_DEPTH`` (default 32) is refused with a
  400 naming the limit, whether the interpreter's own recursion limit or ours is hit.

UTF-8 bodies take a fast path (issue 9, ingest): ``orjson`` parses them and the nesting
depth is read off the bytes with numpy (brackets outside strings, one cumulative sum)
instead of walking the parsed tree. Whatever the fast path cannot vouch for goes through
the standard parser above, so the results and the messages are the same: a text orjson
refuses (``NaN``, a lone surrogate, bad JSON), an integer literal of 20 or more digits (or
a negative one of 19, beyond 64 bits), or a backslash (escaped quotes would fool the
bracket count; the tree walk then measures the depth).
"""

from __future__ import annotations

import codecs
import json
from typing import Any

import numpy as np
import orjson
from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding

# 2**63 - 1 has 19 digits: longer literals can never be an id, a count or a seed.
MAX_INT_DIGITS = 19
DEFAULT_MAX_DEPTH = 32


def _bounded_int(literal: str) -> int | float:
    digits = len(literal) - (literal[0] == "-")
    return int(literal) if digits <= MAX_INT_DIGITS else float(literal)


def _refuse_constant(name: str) -> Any:
    raise ValueError(_("%(name)s is not a JSON number; send a finite number.") % {"name": name})


def max_depth() -> int:
    return int(getattr(settings, "API_MAX_JSON_DEPTH", DEFAULT_MAX_DEPTH))


def depth_exceeds(data: Any, limit: int) -> bool:
    """Whether ``data`` nests lists/objects more than ``limit`` levels (iterative)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def _scan(raw: bytes) -> tuple[int, bool]:
    """The deepest bracket nesting of valid JSON ``raw`` holding no backslash, and whether
    it holds a run of 19 digits (an integer literal the standard parser must judge).

    Without escapes every ``"`` opens or closes a string, so the brackets outside strings
    are those after an even number of quotes. A run of digits inside a string only sends
    the text to the standard parser, which is slower but agrees.
    """
    if not raw:
        return 0, False
    data = np.frombuffer(raw, dtype=np.uint8)
    digits = np.cumsum((data - ord("0")) < 10, dtype=np.int32)
    long_digits = bool(len(data) > MAX_INT_DIGITS) and bool(
        ((digits[MAX_INT_DIGITS:] - digits[:-MAX_INT_DIGITS]) == MAX_INT_DIGITS).any()
    )
    outside = (np.cumsum(data == ord('"'), dtype=np.int32) & 1) == 0
    step = ((data == ord("[")) | (data == ord("{"))).astype(np.int32) - (
        (data == ord("]")) | (data == ord("}"))
    )
    step &= -outside.astype(np.int32)  # zero inside strings
    return int(np.cumsum(step, dtype=np.int32).max()), long_digits


def fast_loads(raw: bytes) -> Any:
    """:func:`loads` for UTF-8 bytes: orjson where it is known to agree, else :func:`loads`."""
    if b"\\" in raw:
        return loads(raw.decode("utf-8"))
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        # The standard parser's message (or its result, where it accepts what orjson does not).
        return loads(raw.decode("utf-8"))
    depth, long_digits = _scan(raw)
    if long_digits:
        return loads(raw.decode("utf-8"))
    limit = max_depth()
    if depth > limit:
        raise ValueError(_("JSON nested deeper than %(limit)s levels.") % {"limit": limit})
    return data


def loads(text: str | bytes) -> Any:
    """Parse JSON text with the API's limits; raises :class:`ValueError` naming the problem."""
    limit = max_depth()
    try:
        data = json.loads(text, parse_int=_bounded_int, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError(
            _("JSON nested deeper than %(limit)s levels.") % {"limit": limit}
        ) from None
    if depth_exceeds(data, limit):
        raise ValueError(_("JSON nested deeper than %(limit)s levels.") % {"limit": limit})
    return data


class GuardedJSONParser(JSONParser):
    """:class:`rest_framework.parsers.JSONParser` with the limits of :func:`loads`."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        encoding = get_encoding(parser_context or {})
        try:
            if stream is None:
                return loads("")
            if codecs.lookup(encoding).name == "utf-8":
                return fast_loads(stream.read())
            return loads(codecs.getreader(encoding)(stream).read())
        except ValueError as exc:  # includes UnicodeDecodeError and json.JSONDecodeError
            raise ParseError(_("JSON parse error - %(problem)s") % {"problem": exc}) from None
