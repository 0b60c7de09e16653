#!/usr/bin/env bash
# The main job on the embedded default: import Claude Code transcripts into the
# local journal and search them. Usage: scripts/try.sh [FOLDER_OR_FILE] [QUERY]
# (default folder: ~/.claude/projects). Installs claude-chats into .venv first.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
source_dir=${1:-${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects}
query=${2:-error}
.venv/bin/chats import "$source_dir"
.venv/bin/chats sessions --limit 5
.venv/bin/chats search "$query" --limit 5
