"""JSON for the hook's hot path without importing ``json`` (which imports ``re``).

The hook's budget is a few milliseconds above bare interpreter start, and
``import json`` costs about as much as the hook's actual work. CPython's C
scanner (``_json.make_scanner``, the one ``json.loads`` uses) decodes exactly
like ``json.loads``; a tiny encoder covers the flat records the hook writes.
Elsewhere, use ``json``.
"""

try:
    from _json import encode_basestring_ascii as _quote
    from _json import make_scanner as _make_scanner
except ImportError:  # pragma: no cover - not CPython
    _make_scanner = None


class _Context:
    """The attributes the C scanner reads from a decoder (see json.decoder.JSONDecoder)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}.__getitem__
    memo = {}


_scan = _make_scanner(_Context()) if _make_scanner else None
_WS = " \t\n\r"


def loads(data):
    """``json.loads`` for one document (bytes must be UTF-8). Raises ValueError."""
    if _scan is None:  # pragma: no cover
        import json
        return json.loads(data)
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    start = len(text) - len(text.lstrip(_WS))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"no JSON value at character {exc.value}") from None
    if text[end:].strip(_WS):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


def dumps(obj):
    """JSON for flat dicts/lists of str, int, float, bool and None (what the hook logs)."""
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, str):
        return _quote(obj)
    if isinstance(obj, (int, float)):
        return repr(obj)
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{_quote(str(k))}: {dumps(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ", ".join(dumps(v) for v in obj) + "]"
    return _quote(str(obj))
