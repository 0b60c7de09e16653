"""Standard output's descriptor in ``chats mcp``, until FastMCP's stdio transport has claimed it.

llama-cpp-python silences a model's load by pointing fd 1 (and 2) at the null device and back.
In ``chats mcp``, fd 1 is FastMCP's pipe to the front (``mcp.front``) until the MCP SDK's stdio
transport claims it (a private duplicate becomes the wire, fd 1 then writes to stderr): a load at
that moment hands the SDK the null device for its wire, and every answer of FastMCP's is lost (the
front's own answers still came; a tool call only FastMCP answers then waited for ever). The front
answers searches and opens the stores before FastMCP is up, so a model could load then. It holds
this gate (``hold``) until it sees the claim (``release``); whatever plays with fd 1 waits for it
first (``wait``). In every other process the gate is open.
"""

import threading

WAIT = 60.0   # seconds a load waits at most (the front releases the gate when FastMCP fails, too)

_open = threading.Event()
_open.set()


def hold():
    _open.clear()


def release():
    _open.set()


def wait(timeout=WAIT):
    """True once fd 1 may be played with (at once, but in ``chats mcp`` before FastMCP has claimed it)."""
    return _open.wait(timeout)
