"""The preset dictionary a kept transcript line is compressed with (``rawlines.pack``).

A kept line is compressed on its own (one row per line), so zlib starts each line knowing nothing,
and the envelope every line repeats (``"parentUuid"``, ``"isSidechain":false``, ``"userType":
"external"``, ``"cwd"``, the message and usage keys...) costs its bytes again in every row. zlib's
preset dictionary (FDICT) lets each line refer back to those strings instead. The dictionary below
is written by hand from the transcript format (keys, and values that are the same for everyone:
types, roles, tool names); it holds nothing of anyone's transcripts, so nothing a purge must
remove lives in it. Measured on 2,989 real kept lines (the shared corpus, 1.0.24 to 2.1.x): 1,890
-> 1,713 bytes a line; on bench_scale's synthetic ones 1,043 -> 863 (BENCHMARKS.md, "The journal's size").

A packed line names its dictionary by the adler32 in its zlib header (``DICTID``): ``unpack`` finds
it in ``DICTIONARIES``. A dictionary once shipped is never changed nor removed (a better one is
added beside it under its own id), so every version from this one on reads every line; a version
before this one cannot read a line packed with it and says so ("not zlib data").
"""

import zlib

DICTIONARY_2026_12 = (
    b'{"type":"summary","summary":"","leafUuid":""}'
    b'{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/","sessionId":"",'
    b'"version":"2.1.","gitBranch":"main","slug":"","type":"system","subtype":"compact_boundary",'
    b'"content":"Conversation compacted","isMeta":false,"timestamp":"2026-","uuid":"","level":"info",'
    b'"toolUseID":"toolu_","logicalParentUuid":"","compactMetadata":{"trigger":"auto","preTokens":}'
    b'"attachment":{"type":"","content":""},"entrypoint":"cli","promptId":"","agentId":"",'
    b'"permissionMode":"default","thinkingMetadata":{"level":"high","disabled":false,"triggers":[]},"todos":[],'
    b'"toolUseResult":{"stdout":"","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false},'
    b'"sourceToolAssistantUUID":"","sourceToolUseID":"toolu_",'
    b'"toolUseResult":{"type":"text","file":{"filePath":"/home/","content":"","numLines":,"startLine":1,"totalLines":}},'
    b'"toolUseResult":{"filePath":"/home/","oldString":"","newString":"","originalFile":"","structuredPatch":'
    b'[{"oldStart":,"oldLines":,"newStart":,"newLines":,"lines":["'
    b'"]}],"userModified":false,"replaceAll":false},'
    b'"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_","type":"tool_result",'
    b'"content":"","is_error":false}]},'
    b'"type":"user","message":{"role":"user","content":[{"type":"text","text":""}]},'
    b'"requestId":"req_","type":"assistant","message":{"model":"claude-opus-4-","id":"msg_","type":"message",'
    b'"role":"assistant","content":[{"type":"thinking","thinking":"","signature":""},{"type":"tool_use",'
    b'"id":"toolu_","name":"Bash","input":{"command":"","description":""}},{"type":"text","text":""}],'
    b'"stop_reason":"tool_use","stop_sequence":null,"stop_details":null,"usage":{"input_tokens":,'
    b'"cache_creation_input_tokens":,"cache_read_input_tokens":,"cache_creation":{"ephemeral_5m_input_tokens":0,'
    b'"ephemeral_1h_input_tokens":},"output_tokens":,"service_tier":"standard","server_tool_use":'
    b'{"web_search_requests":0,"web_fetch_requests":0},"inference_geo":"","iterations":[],"speed":"standard"},'
    b'"context_management":null},'
    b'"type":"assistant","uuid":"","timestamp":"2026-"}'
)

CURRENT = DICTIONARY_2026_12                           # what ``rawlines.pack`` compresses with
DICTIONARIES = {zlib.adler32(d): d for d in (DICTIONARY_2026_12,)}


def dictionary_id(blob):
    """The dictionary id a packed line's zlib header names, or None (no preset dictionary)."""
    if len(blob) < 6 or not blob[1] & 0x20:   # FLG's FDICT bit
        return None
    return int.from_bytes(blob[2:6], "big")
