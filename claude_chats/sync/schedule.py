"""``chats schedule install|remove|show``: run the sync periodically.

Three backends with one interface (``install(minutes)``, ``remove()``,
``show()``), picked by what the platform has: a launchd agent on macOS, a
systemd user timer where ``systemctl --user`` works, a crontab entry
otherwise. The job is ``python -m claude_chats.sync --background``, which
nices itself, takes the sync lock and logs to ``sync.log``.
"""

import os
import plistlib
import shlex
import shutil
import subprocess
import sys

from .. import paths
from ..errors import ClaudeChatsError
from .background import command

LABEL = "com.claude-chats.sync"
UNIT = "claude-chats-sync"
CRON_TAG = "# claude-chats sync"
PASSED_ENV = ("CLAUDE_CHATS_HOME", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME")


class ScheduleError(ClaudeChatsError):
    """The scheduler (cron, systemd, launchd) refused the job."""


def _run(argv, input_text=None, check=True):
    try:
        done = subprocess.run(argv, input=input_text, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ScheduleError(f"{argv[0]} failed: {exc}") from None
    if check and done.returncode != 0:
        raise ScheduleError(f"`{' '.join(argv)}` failed: {(done.stderr or done.stdout).strip()}")
    return done


def _environment():
    return {k: os.environ[k] for k in PASSED_ENV if os.environ.get(k)}


class Scheduler:
    name = None

    def install(self, minutes):
        """Install (or replace) the job running every ``minutes``; returns where it went."""
        raise NotImplementedError

    def remove(self):
        """Remove the job; returns False when there was none."""
        raise NotImplementedError

    def show(self):
        """The installed job's definition, or None."""
        raise NotImplementedError


class Cron(Scheduler):
    name = "cron"

    def _lines(self):
        done = _run(["crontab", "-l"], check=False)
        return done.stdout.splitlines() if done.returncode == 0 else []

    def _write(self, lines):
        _run(["crontab", "-"], input_text="".join(line + "\n" for line in lines))

    def entry(self, minutes):
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in _environment().items())
        every = f"*/{minutes} * * * *" if minutes < 60 else f"0 */{max(1, minutes // 60)} * * *"
        job = " ".join(shlex.quote(part) for part in command())
        return f"{every} {env + ' ' if env else ''}{job} {CRON_TAG}"

    def install(self, minutes):
        self._write([line for line in self._lines() if CRON_TAG not in line] + [self.entry(minutes)])
        return "crontab"

    def remove(self):
        lines = self._lines()
        kept = [line for line in lines if CRON_TAG not in line]
        if len(kept) == len(lines):
            return False
        self._write(kept)
        return True

    def show(self):
        found = [line for line in self._lines() if CRON_TAG in line]
        return "\n".join(found) or None


class Systemd(Scheduler):
    name = "systemd"

    def folder(self):
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
        return os.path.join(base, "systemd", "user")

    def units(self, minutes):
        env = "".join(f"Environment={shlex.quote(f'{k}={v}')}\n" for k, v in _environment().items())
        service = ("[Unit]\nDescription=claude-chats: push the journal to Postgres\n\n"
                   f"[Service]\nType=oneshot\nNice=10\n{env}ExecStart={shlex.join(command())}\n")
        timer = ("[Unit]\nDescription=claude-chats sync timer\n\n"
                 f"[Timer]\nOnBootSec=2min\nOnUnitActiveSec={minutes}min\nPersistent=true\n\n"
                 "[Install]\nWantedBy=timers.target\n")
        return {f"{UNIT}.service": service, f"{UNIT}.timer": timer}

    def install(self, minutes):
        folder = paths.ensure_private_dir(self.folder())
        for name, text in self.units(minutes).items():
            with open(os.path.join(folder, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        _run(["systemctl", "--user", "daemon-reload"])
        _run(["systemctl", "--user", "enable", "--now", f"{UNIT}.timer"])
        return os.path.join(folder, f"{UNIT}.timer")

    def remove(self):
        files = [os.path.join(self.folder(), f"{UNIT}.{ext}") for ext in ("timer", "service")]
        if not any(os.path.exists(f) for f in files):
            return False
        _run(["systemctl", "--user", "disable", "--now", f"{UNIT}.timer"], check=False)
        for f in files:
            if os.path.exists(f):
                os.remove(f)
        _run(["systemctl", "--user", "daemon-reload"], check=False)
        return True

    def show(self):
        texts = []
        for ext in ("timer", "service"):
            path = os.path.join(self.folder(), f"{UNIT}.{ext}")
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    texts.append(f"# {path}\n{fh.read()}")
        return "\n".join(texts) or None


class Launchd(Scheduler):
    name = "launchd"

    def path(self):
        return os.path.expanduser(f"~/Library/LaunchAgents/{LABEL}.plist")

    def plist(self, minutes):
        log = os.path.join(paths.log_dir(), "sync-launchd.log")
        return {"Label": LABEL, "ProgramArguments": command(), "StartInterval": minutes * 60,
                "RunAtLoad": True, "Nice": 10, "ProcessType": "Background",
                "EnvironmentVariables": _environment(), "StandardOutPath": log, "StandardErrorPath": log}

    def install(self, minutes):
        path = self.path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            _run(["launchctl", "unload", path], check=False)
        with open(path, "wb") as fh:
            plistlib.dump(self.plist(minutes), fh)
        _run(["launchctl", "load", "-w", path])
        return path

    def remove(self):
        path = self.path()
        if not os.path.exists(path):
            return False
        _run(["launchctl", "unload", "-w", path], check=False)
        os.remove(path)
        return True

    def show(self):
        path = self.path()
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as fh:
            return f"# {path}\n{fh.read()}"


SCHEDULERS = {cls.name: cls for cls in (Launchd, Systemd, Cron)}


def detect():
    """The scheduler this platform has: launchd, a working systemd user manager, or cron."""
    if sys.platform == "darwin":
        return Launchd()
    if shutil.which("systemctl") and _run(["systemctl", "--user", "is-system-running"], check=False).stdout.strip() \
            in ("running", "degraded", "starting"):
        return Systemd()
    if shutil.which("crontab"):
        return Cron()
    raise ScheduleError("no scheduler found (launchd, systemd --user or crontab): install cron, "
                        "or run `chats sync` from your own scheduler")


def get(name=None):
    if name is None:
        return detect()
    try:
        return SCHEDULERS[name]()
    except KeyError:
        raise ScheduleError(f"unknown scheduler {name!r}; choose one of {', '.join(SCHEDULERS)}") from None
