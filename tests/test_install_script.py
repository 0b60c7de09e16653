"""``scripts/install.sh`` as a newcomer runs it (issue 16, item 14), with stand-ins for what it calls.

A fake ``python`` (``PYTHON``) makes the venv and a fake ``chats`` that writes
down how it was called; a fake ``docker`` without the compose plugin answers
``docker compose`` as the real one does. ``--postgres`` then stops at once and
says what is missing (it used to install everything, then die on ``unknown
shorthand flag: 'd' in -d``); and the program's venv goes beside the data
folder, not inside it, so deleting the data to start afresh keeps the program
the hooks run.
"""

import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "install.sh"

FAKE_PYTHON = """#!/bin/sh
echo "python $*" >> "$FAKE_LOG"
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  cp "$0" "$3/bin/python"
  printf '#!/bin/sh\\necho "chats $*" >> "$FAKE_LOG"\\n' > "$3/bin/chats"
  chmod +x "$3/bin/python" "$3/bin/chats"
fi
exit 0
"""

FAKE_DOCKER = """#!/bin/sh
echo "docker $*" >> "$FAKE_LOG"
if [ "$1" = "compose" ]; then
  echo "docker: unknown command: docker compose" >&2
  exit 1
fi
exit 0
"""


def sandbox(tmp_path):
    """(environment, log file): PATH with only the system tools and the fakes (no uv, no docker-compose)."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    for name, text in (("python", FAKE_PYTHON), ("docker", FAKE_DOCKER)):
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    system = tmp_path / "sysbin"
    system.mkdir()
    for tool in ("bash", "sh", "sed", "dirname", "mkdir", "cp", "chmod", "cat", "printf", "env"):
        for folder in ("/usr/bin", "/bin"):
            if os.path.exists(os.path.join(folder, tool)):
                (system / tool).symlink_to(os.path.join(folder, tool))
                break
    log = tmp_path / "calls.log"
    env = {"PATH": f"{fake}:{system}", "HOME": str(tmp_path / "home"), "PYTHON": str(fake / "python"),
           "FAKE_LOG": str(log)}
    (tmp_path / "home").mkdir()
    return env, log


def run(env, *args):
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)


def test_postgres_without_a_compose_plugin_says_what_is_missing_before_installing(tmp_path):
    env, log = sandbox(tmp_path)
    result = run(env, "--postgres")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "unknown shorthand flag" not in result.stderr
    assert "docker compose" in result.stderr and "docker-compose" in result.stderr, result.stderr
    assert "--database-url" in result.stderr
    calls = log.read_text() if log.exists() else ""
    assert "python" not in calls, f"it installed before finding out: {calls}"


def test_the_program_is_installed_beside_the_data_folder_not_in_it(tmp_path):
    env, log = sandbox(tmp_path)
    result = run(env, "--no-import", "--no-sync")
    assert result.returncode == 0, result.stdout + result.stderr
    home = pathlib.Path(env["HOME"])
    data = home / ".local" / "share" / "claude-chats"            # the journal's folder (platformdirs)
    calls = log.read_text().splitlines()
    venv = pathlib.Path(next(c for c in calls if c.startswith("python -m venv")).split()[-1])
    assert not venv.is_relative_to(data), f"the venv {venv} is inside the data folder {data}"
    assert (venv / "bin" / "chats").exists()
    assert any(c.startswith("chats install") for c in calls), calls
