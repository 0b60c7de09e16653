"""What is no single JSON-RPC message gets an answer over ``chats mcp``'s stdio (issue 21, item 8).

The MCP SDK's stdio reader drops a line it cannot read as one message, without a reply: a malformed
line, a batch (MCP took JSON-RPC batching out in its 2025-06-18 revision; the SDK reads one message a
line) or JSON that is not JSON-RPC 2.0 left the client waiting for ever. Now the front answers them
as JSON-RPC 2.0 says. Each refusal is checked to come before the answer to a request sent after it:
before the fix the first answer was that later one's.
"""

import json

import pytest

from tests.support.wire import wire  # noqa: F401 - the fixture

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
TOOLS_LIST = '{"jsonrpc":"2.0","id":%d,"method":"tools/list"}'


def refused(wire, line, next_id):
    """The answer ``line`` got, checked to come before the answer to a tools/list sent after it."""
    wire.send(line)
    wire.send(TOOLS_LIST % next_id)
    first = wire.answer()
    assert first is not None, "no answer at all"
    assert not (isinstance(first, dict) and first.get("id") == next_id), f"no answer to {line!r}"
    assert wire.reply(next_id)["result"]["tools"]    # and the server goes on
    return first


def error(code, mid=None):
    return {"jsonrpc": "2.0", "id": mid, "code": code}


def shape(answer):
    return {"jsonrpc": answer["jsonrpc"], "id": answer["id"], "code": answer["error"]["code"]}


@pytest.mark.parametrize("line", ['{"jsonrpc":"2.0","id":5,"method":', "not json at all", '{"a":1}}', "\xff\xfe"])
def test_a_line_that_is_not_json_is_a_parse_error(wire, line):
    answer = refused(wire, line, 10)
    assert shape(answer) == error(PARSE_ERROR)
    assert "Parse error" in answer["error"]["message"]


def test_an_empty_batch_is_one_invalid_request(wire):
    answer = refused(wire, "[]", 10)
    assert isinstance(answer, dict) and shape(answer) == error(INVALID_REQUEST)


def test_a_batch_gets_an_invalid_request_for_each_request_in_it(wire):
    batch = [{"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},    # a notification: no answer
             {"jsonrpc": "2.0", "id": "s-6", "method": "ping"},
             7]                                                             # not a request: id null
    answer = refused(wire, json.dumps(batch), 10)
    assert isinstance(answer, list)
    assert [shape(a) for a in answer] == [error(INVALID_REQUEST, 5), error(INVALID_REQUEST, "s-6"),
                                          error(INVALID_REQUEST)]
    assert all("2025-06-18" in a["error"]["message"] for a in answer)   # says why, and what to send


def test_a_batch_of_notifications_gets_no_answer(wire):
    wire.send(json.dumps([{"jsonrpc": "2.0", "method": "notifications/initialized"}]))
    wire.send(TOOLS_LIST % 10)
    assert wire.answer()["id"] == 10


@pytest.mark.parametrize("line, mid", [("5", None), ('"tools/list"', None), ('{"id":7,"method":"tools/list"}', 7),
                                       ('{"jsonrpc":"1.0","id":8,"method":"tools/list"}', 8),
                                       ('{"jsonrpc":"2.0","id":9,"method":7}', 9),
                                       ('{"jsonrpc":"2.0","id":[1],"method":"ping"}', None)])
def test_json_that_is_not_a_json_rpc_message_is_an_invalid_request(wire, line, mid):
    assert shape(refused(wire, line, 10)) == error(INVALID_REQUEST, mid)


def test_a_line_with_invalid_utf8_inside_a_string_is_read_as_the_sdk_reads_it(wire):
    """The SDK reads the client's bytes with errors="replace": such a request is answered, not refused."""
    wire.send(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_recent_sessions",'
              b'"arguments":{"project_path":"/work/\xff"}}}')
    answer = wire.reply(4, timeout=120)
    assert answer is not None and "result" in answer, answer
