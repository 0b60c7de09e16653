"""JSON for the hook's hot path without importing ``json`` (which imports ``re``).

The hook's budget is a few milliseconds above bare interpreter start, and
``import json`` costs about as much as the hook's actual work. CPython's C
scanner (``_json.make_scanner``, the one ``json.loads`` uses) decodes exactly
like ``json.loads``; a tiny encoder covers the flat records the hook writes.
Elsewhere, use ``json``.

Malformed input: the C scanner builds its error (``json.JSONDecodeError``) from
``json.decoder`` *if that module is already imported*; when it is not (the
hook's process), it fails with a ``SystemError`` ("returned NULL without setting
an exception"). ``loads`` then hands the same text to ``json.loads``, which
raises the very error ``json.loads`` raises: the shim is exact for bad lines
too, and pays for ``import json`` only on the first one.
"""

try:
    from _json import encode_basestring as _quote_utf8
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


class _LaxContext(_Context):
    strict = False  # control characters allowed inside strings


_scan = _make_scanner(_Context()) if _make_scanner else None
_scan_lax = _make_scanner(_LaxContext()) if _make_scanner else None
_WS = " \t\n\r"


def loads(data, strict=True):
    """``json.loads`` for one document (bytes must be UTF-8); its ``JSONDecodeError`` (a ValueError) when malformed.

    ``strict=False`` allows control characters inside strings, as in ``json``.
    """
    if _scan is None:  # pragma: no cover
        return _json_loads(data, strict)
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    start = len(text) - len(text.lstrip(_WS))
    try:
        value, end = (_scan if strict else _scan_lax)(text, start)
    except (StopIteration, SystemError):   # malformed (see the module docstring): json says how, exactly
        return _json_loads(text, strict)
    if text[end:].strip(_WS):
        return _json_loads(text, strict)
    return value


def _json_loads(text, strict):
    import json

    return json.loads(text, strict=strict)


def dumps(obj, ensure_ascii=True, separators=(", ", ": "), _depth=0):
    """``json.dumps`` for plain data: dicts, lists, str, int, float, bool, None.

    Anything else is written as its ``str``; nesting deeper than 32 levels as
    ``"…"`` (the hook must never fail on a hostile transcript).
    """
    quote = _quote if ensure_ascii else _quote_utf8
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, str):
        return quote(obj)
    if isinstance(obj, (int, float)):
        return repr(obj)
    if _depth > 32:
        return quote("…")
    item, key = separators
    if isinstance(obj, dict):
        return "{" + item.join(f"{quote(str(k))}{key}{dumps(v, ensure_ascii, separators, _depth + 1)}"
                               for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + item.join(dumps(v, ensure_ascii, separators, _depth + 1) for v in obj) + "]"
    return quote(str(obj))
