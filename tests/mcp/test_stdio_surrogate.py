"""A lone surrogate escape over ``chats mcp``'s stdio gets an answer (issue 16, item 9).

``JSON.stringify`` writes a lone UTF-16 surrogate as ``"\\ud800"``. The MCP SDK's stdio
reader (pydantic's JSON parser) refuses the line and drops it: before the fix the request
was never answered. The client here writes the JSON-RPC lines itself, byte for byte.
"""

import pytest

from tests.support.wire import wire  # noqa: F401 - the fixture


def tool_call(request_id, name, arguments_json):
    return ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
            % (request_id, name, arguments_json))


@pytest.mark.parametrize("name, arguments_json, argument", [
    ("search_memory", '{"query":"\\ud800"}', "query"),
    ("search_memory", '{"query":"ok","session_id":"s-\\uDFFF-1"}', "session_id"),
    ("get_conversation", '{"session_id":"\\udbff"}', "session_id"),
])
def test_a_lone_surrogate_is_answered_with_a_tool_error(wire, name, arguments_json, argument):
    wire.send(tool_call(2, name, arguments_json))
    answer = wire.reply(2)
    assert answer is not None, "no reply at all"
    assert answer["result"]["isError"] is True
    text = answer["result"]["content"][0]["text"]
    assert argument in text and "lone surrogate" in text
    wire.send('{"jsonrpc":"2.0","id":3,"method":"tools/list"}')
    assert wire.reply(3)["result"]["tools"]            # and the server goes on
    wire.send(tool_call(4, "list_recent_sessions", '{"project_path":"/work/\\ud83d\\ude00"}'))
    paired = wire.reply(4)                             # a surrogate pair is text like any other
    assert paired is not None and paired["result"].get("isError") is not True, paired
