"""What is kept out of the journal before anything is stored (ground floor: the hook's path).

Two ways, both applied by the transcript reader (``transcript.parse_lines``), so a line kept out
reaches no table, no WAL frame, no Postgres row and no log:

- **Projects**: the ``exclude_projects`` setting lists project folders (a folder and everything
  below it; ``*``, ``?`` and ``[...]`` as in shell globs, ``*`` matching ``/`` too). A transcript
  whose lines' ``cwd`` is one of them is kept out whole, and so are its subagents; the hook does
  not even read it when Claude Code's payload names such a ``cwd``.
- **Markers** the person types in a prompt: ``#chats-skip`` keeps that prompt and the turn it
  starts (the answers, tool calls and results, subagents, up to the next prompt) out;
  ``#chats-off`` keeps that prompt and the rest of the session out (its resumes too: they
  append to the same file).

``ProjectFilter(patterns)(path)`` says whether a path is excluded. A path and a pattern match in
their given or their resolved form (``os.path.realpath``: a pattern naming a symlinked folder holds
for the real path Claude Code records, and the reverse; macOS' ``/tmp`` is ``/private/tmp``).
Resolving costs a ``stat`` per folder of the path and patterns with glob characters cost
``fnmatch`` (and with it ``re``, about 3 ms of the hook's import): both only for a path it has not
judged before: ``known`` takes the verdicts of earlier runs (the hook keeps them in the journal
beside the patterns), ``verdicts`` gives them back.
"""

import os

SKIP, OFF = "#chats-skip", "#chats-off"
MARK = "#chats-"
GLOB = frozenset("*?[")


class ProjectFilter:
    """``filter(path)``: whether ``path`` is, or is below, one of the excluded project patterns."""

    __slots__ = ("folders", "globs", "_seen", "_known", "_resolved")

    def __init__(self, patterns, known=None):
        patterns = [p.rstrip("/") or "/" for p in patterns if p]
        self.folders = tuple(p for p in patterns if not GLOB & set(p))
        self.globs = tuple(p for p in patterns if GLOB & set(p))
        self._seen = dict(known or {})
        self._known = len(self._seen)
        self._resolved = None   # the patterns, given and resolved: computed for the first new verdict

    def verdicts(self):
        """Every path judged so far (with ``known``), and whether it is excluded."""
        return dict(self._seen)

    def learned(self):
        """Whether a path ``known`` did not hold was judged (worth keeping for the next run)."""
        return len(self._seen) > self._known

    def __bool__(self):
        return bool(self.folders or self.globs)

    def __call__(self, path):
        found = self._seen.get(path)
        if found is None:
            found = self._seen[path] = self._match(path)
        return found

    def _match(self, path):
        path = path.rstrip("/") or "/"
        if _matches(path, self.folders, self.globs):   # as given: no system call
            return True
        if self._resolved is None:
            self._resolved = (tuple({_real(f) for f in self.folders} - set(self.folders)),
                              tuple({_real_glob(g) for g in self.globs} - set(self.globs)))
        folders, globs = self._resolved
        real = _real(path)
        if (folders or globs) and _matches(path, folders, globs):
            return True
        return real != path and _matches(real, self.folders + folders, self.globs + globs)


MAX_RESOLVED = 4096   # a longer path (no real folder is) is compared as given only


def _real(path):
    """``os.path.realpath(path)``; ``path`` itself when it cannot be resolved (a NUL, too long) or is
    not absolute (resolved against the hook's own folder, it would mean another folder)."""
    if len(path) > MAX_RESOLVED or "\x00" in path or not os.path.isabs(path):
        return path
    try:
        return os.path.realpath(path).rstrip("/") or "/"
    except (OSError, ValueError):
        return path


def _real_glob(pattern):
    """A glob with its folders up to the first glob character resolved (``_real``)."""
    cut = pattern.rfind("/", 0, min(i for i, c in enumerate(pattern) if c in GLOB))
    if cut < 0:
        return pattern
    head = _real(pattern[:cut] or "/")
    return (head if head != "/" else "") + pattern[cut:]


def _matches(path, folders, globs):
    for folder in folders:
        if path == folder or path.startswith(folder if folder == "/" else folder + "/"):
            return True
    if globs:
        from fnmatch import fnmatchcase  # imports re: only for a pattern with a glob

        return any(fnmatchcase(path, g) or fnmatchcase(path, g + "/*") for g in globs)
    return False


def marker(text):
    """``"off"``, ``"skip"`` or None: what a prompt's text says about keeping it (``#chats-off`` wins)."""
    if "#" not in text:
        return None
    low = text.lower()
    if MARK not in low:
        return None
    if _has(low, OFF):
        return "off"
    if _has(low, SKIP):
        return "skip"
    return None


def _has(text, tag):
    """``tag`` in ``text`` as a word of its own (``#chats-offline`` is not ``#chats-off``)."""
    start = text.find(tag)
    while start >= 0:
        end = start + len(tag)
        if end == len(text) or not (text[end].isalnum() or text[end] in "-_"):
            return True
        start = text.find(tag, end)
    return False


def cwd_of(raw):
    """The ``cwd`` a transcript line (bytes) names, read without decoding the whole line; None when
    it names none. A value holding an escape is decoded properly."""
    at = raw.find(b'"cwd":')
    if at < 0:
        return None
    start = raw.find(b'"', at + 6)
    end = raw.find(b'"', start + 1) if start >= 0 else -1
    if end < 0:
        return None
    value = raw[start + 1:end]
    if b"\\" not in value:
        return value.decode("utf-8", "replace")
    from . import jsonl

    try:
        obj = jsonl.loads(raw)
    except (ValueError, RecursionError):
        return None
    cwd = obj.get("cwd") if isinstance(obj, dict) else None
    return cwd if isinstance(cwd, str) else None
