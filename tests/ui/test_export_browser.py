"""The exported HTML file opened in a real browser (Debian's headless chromium): nothing runs.

Each payload, if it ran, would rename the document (``document.title``) on load, with no click:
a script element, ``onerror``, ``onload``, ``ontoggle`` of a ``<details open>``, ``onfocus`` with
``autofocus``, a ``javascript:`` frame. The browser's DOM after load (``--dump-dom``) must keep the
session's title, with the file's CSP and without it (the escaping alone holds), while a page that
does carry one payload as markup is renamed (the control: this browser runs what it is given).
"""

import re
import shutil
import subprocess

import pytest

from claude_chats import transcript
from claude_chats.ui import export

RENAME = "document.title='pwned'"
PAYLOADS = [f"<script>{RENAME}</script>", f"<img src=x onerror=\"{RENAME}\">", f"<svg onload=\"{RENAME}\"></svg>",
            f"<details open ontoggle=\"{RENAME}\">x</details>", f"<input autofocus onfocus=\"{RENAME}\">",
            f"<iframe src=\"javascript:parent.{RENAME}\"></iframe>", f"<body onload=\"{RENAME}\">",
            f"</pre></details></article><script>{RENAME}</script>", f"```\n</code></pre><script>{RENAME}</script>\n```",
            f"[x](javascript:{RENAME}) ![y](javascript:{RENAME})", f"<a href=\"javascript:{RENAME}\">x</a>"]
SESSION = {"session_id": "sess-browser", "name": "the clean title", "project_path": "/work/p", "git_branch": "main",
           "started_at": "2026-01-01T00:00:00.000Z", "last_at": "2026-01-01T00:00:09.000Z", "message_count": 1,
           "machine": "m", "parent_session_id": None, "is_subagent": False, "entrypoint": "cli", "machine_made": False}


def title_after_load(path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no chromium (apt-get install chromium)")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=3000",
                          "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120).stdout
    found = re.search(r"<title>(.*?)</title>", dom)
    assert found, dom[:500]
    return found.group(1)


def hostile_export():
    messages = [{"seq": i, "role": "assistant" if i % 2 else "user", "kind": kind, "timestamp": None,
                 "text": payload}
                for i, (payload, kind) in enumerate((p, k) for p in PAYLOADS for k in transcript.KINDS)]
    return export.html(SESSION, messages)


def test_nothing_in_an_exported_file_runs_in_a_browser(tmp_path):
    page = tmp_path / "export.html"
    page.write_text(hostile_export())
    assert title_after_load(page) == "the clean title"


def test_the_escaping_holds_without_the_files_csp(tmp_path):
    html = hostile_export()
    without = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    assert without != html
    page = tmp_path / "export.html"
    page.write_text(without)
    assert title_after_load(page) == "the clean title"


def test_the_browser_runs_a_payload_given_as_markup(tmp_path):
    page = tmp_path / "control.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>the clean title</title></head><body>{PAYLOADS[1]}</body>"
                    "</html>")
    assert title_after_load(page) == "pwned"
