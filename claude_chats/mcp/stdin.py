"""The client's lines, read before the MCP SDK reads them: a lone surrogate escape gets an answer.

``JSON.stringify`` writes a lone UTF-16 surrogate as an escape (``"\\ud800"``), which
pydantic's JSON parser, the one the MCP SDK's stdio transport uses, refuses ("unexpected
end of hex escape"). The SDK then drops the line without a reply, so the request waits
for ever (modelcontextprotocol/python-sdk#2751, PrefectHQ/fastmcp#1161). Python's ``json``
reads such a line: ``chats mcp``'s front (``mcp.front``) reads the client's lines before the
SDK does and passes every line through ``rewrite``: unchanged except those, which go on
with each lone surrogate as U+FFFD and, for a tool call, the names of the arguments that
held one in the request's ``_meta`` (``META_KEY``); the tool answers with a ToolError
saying so, as it does for a surrogate that reaches it in memory.
"""

META_KEY = "claude-chats/lone-surrogates"
_SURROGATE_ESCAPES = tuple(f"\\ud{c}".encode() for c in "89abcdef")


def rewrite(line):
    """``line`` (bytes) as the SDK can parse it; the same bytes unless it holds a lone surrogate escape."""
    if b"\\u" not in line or not any(escape in line.lower() for escape in _SURROGATE_ESCAPES):
        return line
    import json

    try:
        message = json.loads(line)
    except ValueError:
        return line
    found = []
    message = _cleaned(message, (), found)
    if not found:
        return line     # only surrogate pairs, which pydantic reads
    params = message.get("params") if isinstance(message, dict) else None
    if isinstance(params, dict) and message.get("method") == "tools/call":
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        names = [".".join(map(str, path[2:] if path[:2] == ("params", "arguments") else path)) for path in found]
        params["_meta"] = {**meta, META_KEY: names}
    return json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"


def _cleaned(value, path, found):
    """``value`` with every lone surrogate as U+FFFD; the paths that held one appended to ``found``."""
    if isinstance(value, str):
        if any("\ud800" <= c <= "\udfff" for c in value):
            found.append(path)
            return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
        return value
    if isinstance(value, list):
        return [_cleaned(v, (*path, i), found) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {_cleaned(k, (*path, "(key)"), found): _cleaned(v, (*path, k), found) for k, v in value.items()}
    return value
