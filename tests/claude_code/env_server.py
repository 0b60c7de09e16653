"""A stdio MCP server with no tools that writes the environment it was started with to a file.

Registered beside ``chats mcp`` (``claude mcp add envdump -- python env_server.py OUT``), it shows
what Claude Code passed to the MCP servers of a run (tests/claude_code/test_scrub.py).
"""

import json
import os
import sys

with open(sys.argv[1], "w") as fh:
    json.dump(dict(os.environ), fh)
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "envdump", "version": "0"}}
    elif method.endswith("/list"):
        result = {method.split("/")[0]: []}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": method}}),
              flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
