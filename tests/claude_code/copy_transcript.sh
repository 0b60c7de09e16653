#!/bin/sh
# A hook command as fast as a hook can be: copy the transcript named in the
# payload the moment the hook starts (DIR/<nanoseconds>-<event>.jsonl, the
# payload beside it as .json), to see what Claude Code had written by then.
dir=$1
payload=$(cat)
path=$(printf '%s' "$payload" | sed -n 's/.*"transcript_path" *: *"\([^"]*\)".*/\1/p')
event=$(printf '%s' "$payload" | sed -n 's/.*"hook_event_name" *: *"\([^"]*\)".*/\1/p')
stamp=$(date +%s%N)
[ -f "$path" ] && cp "$path" "$dir/$stamp-$event.jsonl"
printf '%s' "$payload" > "$dir/$stamp-$event.json"
exit 0
