"""The API's JSON parser: the orjson fast path agrees with the standard parser (issue 9).

``config.parsers.fast_loads`` parses UTF-8 request bodies with orjson and reads the
nesting depth and the long-integer bound off the bytes; whatever it cannot vouch for
goes through ``config.parsers.loads``. Same values, same refusals, same messages.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from config import parsers

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**25), max_value=10**25),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
    st.sampled_from(['"', "\\", "[", "]{", "}", '\\"[[', "12345678901234567890"]),
)
JSONISH = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=25,
)


def outcome(function, raw: bytes) -> tuple[str, object]:
    try:
        return "value", function(raw)
    except ValueError as exc:
        return "error", str(exc)


@settings(max_examples=300, deadline=None)
@given(value=JSONISH, ensure_ascii=st.booleans())
def test_the_fast_path_agrees_with_the_standard_parser(value: object, ensure_ascii: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ensure_ascii).encode()
    fast = outcome(parsers.fast_loads, raw)
    slow = outcome(lambda text: parsers.loads(text.decode()), raw)
    assert fast == slow
    assert repr(fast) == repr(slow)  # ints stay ints and floats floats, as before


@settings(max_examples=100, deadline=None)
@given(depth=st.integers(1, 80), wrapper=st.sampled_from(["[", '{"k":']))
def test_the_fast_path_measures_depth_as_the_standard_parser(depth: int, wrapper: str) -> None:
    closer = "]" if wrapper == "[" else "}"
    raw = (wrapper * depth + '"[[[{{{"' + closer * depth).encode()
    fast = outcome(parsers.fast_loads, raw)
    slow = outcome(lambda text: parsers.loads(text.decode()), raw)
    assert fast == slow
    assert (fast[0] == "error") == (depth > parsers.DEFAULT_MAX_DEPTH)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"age": NaN}', "NaN is not a JSON number"),
        (b'{"age": -Infinity}', "-Infinity is not a JSON number"),
        (b"[1, 2", "Expecting"),
        (b"\xff", "can't decode"),
        (b"", "Expecting value"),
        (b"[" * 40 + b"]" * 40, "nested deeper than 32"),
    ],
)
def test_refusals_name_the_problem(raw: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parsers.fast_loads(raw)


def test_long_integers_are_bounded_as_before() -> None:
    assert parsers.fast_loads(b"[1234567890123456789]") == [1234567890123456789]
    (big,) = parsers.fast_loads(b"[12345678901234567890]")
    assert isinstance(big, float)
    (huge,) = parsers.fast_loads(b"[" + b"9" * 400 + b"]")
    assert huge == float("inf")


def test_a_bulk_body_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    body = json.dumps(
        {"responses": [{"participant": f"p{i}", "answers": {"age": 41.5}} for i in range(50)]}
    ).encode()

    def refuse(text: object) -> object:
        raise AssertionError("the standard parser was used")

    monkeypatch.setattr(parsers, "loads", refuse)
    assert len(parsers.fast_loads(body)["responses"]) == 50
