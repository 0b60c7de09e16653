#!/usr/bin/env bash
# One-shot installer: claude-chats into Claude Code, safe to re-run.
#
#   scripts/install.sh [--postgres] [--no-import] [--no-sync] [-- chats install options]
#
# 1. installs the package (uv tool install when uv is there, else a venv in
#    ~/.local/share/claude-chats/venv); EXTRAS picks the extras (default: llama)
# 2. --postgres: starts PostgreSQL + pgvector with docker compose and points the config at it
# 3. chats install: hooks in ~/.claude/settings.json, the MCP server, the config file
#    (options after -- go to it: --provider, --model, --database-url, --schedule)
# 4. chats import: the transcripts Claude Code still has
# 5. chats sync: embeds and pushes (skipped quietly when Postgres or the model is missing)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
EXTRAS=${EXTRAS-llama}
VENV=${CLAUDE_CHATS_VENV:-$HOME/.local/share/claude-chats/venv}
DOCKER_URL=postgresql://chats:chats@localhost:5433/chats

postgres=0 import=1 sync=1
while [ $# -gt 0 ]; do
  case $1 in
    --postgres) postgres=1 ;;
    --no-import) import=0 ;;
    --no-sync) sync=0 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

spec=$ROOT
[ -n "$EXTRAS" ] && spec="$ROOT[$EXTRAS]"

if command -v uv >/dev/null 2>&1; then
  echo "==> uv tool install $spec"
  uv tool install --quiet --force --reinstall "$spec"
  bin=$(uv tool dir --bin)
else
  echo "==> pip install $spec into $VENV"
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet --upgrade "$spec"
  bin=$VENV/bin
fi
chats=$bin/chats

install_args=("$@")
if [ "$postgres" = 1 ]; then
  if ! command -v docker >/dev/null 2>&1; then
    echo "--postgres needs docker; without it, pass -- --database-url URL of any PostgreSQL with pgvector" >&2
    exit 1
  fi
  echo "==> docker compose up -d (PostgreSQL 17 + pgvector on 127.0.0.1:5433)"
  docker compose up -d --wait
  install_args+=(--database-url "$DOCKER_URL")
fi

echo "==> chats install"
"$chats" install "${install_args[@]}"

if [ "$import" = 1 ]; then
  echo "==> chats import"
  projects=${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects
  if [ -d "$projects" ]; then "$chats" import; else echo "no $projects yet: nothing to import"; fi
fi

if [ "$sync" = 1 ]; then
  echo "==> chats sync"
  "$chats" sync || echo "sync did not finish (see above); the hook and \`chats sync\` retry later"
fi

echo "==> chats status"
"$chats" status || true
case ":$PATH:" in
  *":$bin:"*) ;;
  *) echo "note: add $bin to PATH to type \`chats\` directly" ;;
esac
