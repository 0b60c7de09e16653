"""A real headless Chromium (Debian's ``chromium``, driven by Playwright) and ``chats ui`` as a process.

Fixtures (registered as a plugin by tests/conftest.py):

- ``chromium``: the browser, launched once a test module from ``/usr/bin/chromium`` (Playwright's
  own browser download cannot work here); skips, saying why, when chromium or playwright is missing.
- ``page``: a fresh context (its own profile: no cookie, no cache) and a tab in it, 1280x820, that
  records what the page printed to the console, its uncaught errors and every Content-Security-Policy
  violation (``watch``).
- ``sink``: an HTTP listener on loopback that records every request it gets: the URL a hostile
  transcript's payloads would call if any of them ran.

``UI.start()`` runs ``chats ui --no-open --port 0 --local`` in the test's isolated home and reads
the URL from the one line it prints; ``ui.login(page)`` opens it as a person opens the printed link.
"""

import http.server
import os
import pathlib
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

from tests.support import ROOT
from tests.support.hooks import CHATS

# Without the background-networking switches chromium phones home at start, and this closed
# network refuses (or stalls) those connections.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 # a name that resolves to loopback, as an attacker's domain does after DNS rebinding
                 "--host-resolver-rules=MAP rebind.test 127.0.0.1"]
REBIND_HOST = "rebind.test"
URL_LINE = re.compile(r"^claude-chats ui: (http://127\.0\.0\.1:(\d+)/)\?token=([A-Za-z0-9_\-.~%]+)$")
SCREENSHOTS = "CLAUDE_CHATS_SCREENSHOTS"   # a folder (relative to the project): the UI tests save their pictures

# Runs before any page script of every document: records what the Content-Security-Policy refused.
_WATCH_CSP = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(
    {directive: e.violatedDirective, blocked: e.blockedURI, sample: e.sample}));
"""


def chromium_path():
    """Debian's chromium, or the one on PATH; None when there is none."""
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium for the module's tests (each test gets its own context: ``page``)."""
    path = chromium_path()
    if path is None:
        pytest.skip("no chromium (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[dev]'")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class Watch:
    """What a tab printed to its console and the errors it threw, across its navigations."""

    def __init__(self, page):
        self.console = []
        self.errors = []
        page.on("console", lambda msg: self.console.append(f"{msg.type}: {msg.text}"))
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def csp_messages(self):
        return [line for line in self.console if "Content Security Policy" in line]


@pytest.fixture
def page(chromium):
    """A tab in a fresh browser context; ``page.watch`` is its ``Watch``; ``page.csp()`` the CSP refusals
    of the document it shows."""
    context = chromium.new_context(viewport={"width": 1280, "height": 820}, locale="en-US",
                                   timezone_id="UTC")
    context.add_init_script(_WATCH_CSP)
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    tab.watch = Watch(tab)
    tab.csp = lambda: tab.evaluate("window.__csp || []")
    yield tab
    context.close()


def screenshot(page, name):
    """Save the tab as ``<$CLAUDE_CHATS_SCREENSHOTS>/<name>.png`` when that variable is set."""
    folder = os.environ.get(SCREENSHOTS)
    if not folder:
        return None
    path = ROOT / folder / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    return path


# -- chats ui as a process ------------------------------------------------------------------


class UI:
    """``chats ui`` running in the test's isolated home, and the URL it printed."""

    def __init__(self, proc, out, err, url, port, token):
        self.proc, self.out, self.err = proc, out, err
        self.base, self.port, self.token = url, int(port), token
        self.url = f"{url}?token={token}"

    @classmethod
    def start(cls, folder, *extra, timeout=60):
        folder = pathlib.Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        out, err = folder / "ui.stdout", folder / "ui.stderr"
        argv = CHATS + ["ui", "--no-open", "--port", "0", "--local", *extra]
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = out.read_text(errors="replace")
            if "\n" in text:
                match = URL_LINE.match(text.splitlines()[0])
                if not match:
                    proc.kill()
                    proc.wait()
                    raise AssertionError(f"chats ui printed {text!r}, not the URL line")
                return cls(proc, out, err, *match.groups())
            if proc.poll() is not None:
                raise AssertionError(f"chats ui exited {proc.returncode}: {err.read_text(errors='replace')[-3000:]}")
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        raise AssertionError(f"chats ui printed no URL in {timeout} s: {err.read_text(errors='replace')[-3000:]}")

    def path(self, path):
        """The absolute URL of ``path`` on this server (no token)."""
        return self.base.rstrip("/") + path

    def login(self, page):
        """Open the printed URL as a person does; the token becomes a cookie and leaves the address bar."""
        response = page.goto(self.url)
        assert response.ok, f"{self.url} -> {response.status}"
        assert "token=" not in page.url, page.url
        return response

    def stderr(self):
        return self.err.read_text(errors="replace")

    def stop(self, timeout=20):
        """SIGTERM, as a person's Ctrl-C or a service manager does; its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"chats ui still running {timeout} s after SIGTERM") from None
        return self.proc.returncode


# -- where a hostile payload would call ----------------------------------------------------------


class Sink:
    """An HTTP listener on loopback that records the path of every request it gets."""

    def __init__(self):
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def _record(self):
                hits.append(f"{self.command} {self.path}")
                self.send_response(204)
                self.end_headers()

            do_GET = do_POST = do_HEAD = _record

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sink():
    listener = Sink()
    yield listener
    listener.close()


# -- what a page must never do with stored text ----------------------------------------------------

# Every element the page has that stored text could have smuggled in as markup rather than text.
_MARKUP = r"""(exported) => {
  const out = [];
  const here = exported ? 'file:' : location.origin;
  for (const el of document.querySelectorAll('*')) {
    for (const attr of el.getAttributeNames())
      if (attr.toLowerCase().startsWith('on')) out.push(`${el.tagName} ${attr}`);
  }
  for (const s of document.scripts)
    if (exported || !s.src || new URL(s.src).origin !== here || !new URL(s.src).pathname.startsWith('/static/'))
      out.push(`script ${s.src || s.textContent.slice(0, 80)}`);
  for (const a of document.querySelectorAll('a[href], area[href]'))
    if (!['http:', 'https:'].includes(new URL(a.href, location.href).protocol)
        && !(a.getAttribute('href').startsWith('#') && /^#[\w-]+$/.test(a.getAttribute('href'))))
      out.push(`link ${a.href}`);   // an in-page anchor (#seq-N) of an export opened from disk is no way out
  for (const img of document.querySelectorAll('img, image, video, audio, source'))
    if (img.src && !img.src.startsWith(here + '/') && !img.src.startsWith('data:')) out.push(`media ${img.src}`);
  const ownPolicy = exported && document.head.querySelectorAll('meta[http-equiv]').length === 1
    ? document.head.querySelector('meta[http-equiv="Content-Security-Policy"]') : null;   // the export's own CSP
  for (const el of document.querySelectorAll('iframe, frame, object, embed, base, meta[http-equiv]'))
    if (el !== ownPolicy) out.push(el.outerHTML.slice(0, 120));
  for (const f of document.querySelectorAll('form'))
    if (exported || new URL(f.action, location.href).origin !== here) out.push(`form ${f.action}`);
  const styles = document.querySelectorAll('style');   // an export carries its own CSS: one style element
  if (styles.length > (exported ? 1 : 0)) out.push(`${styles.length} style elements`);
  return out;
}"""


def assert_nothing_ran(page, sink, settle_ms=300, exported=False):
    """No payload of the stored text ran or was even parsed as markup: nothing set ``window.pwned`` or
    the title, nothing called ``sink``, the CSP had nothing to refuse, the DOM holds no element or
    attribute that came from stored text. ``exported``: a page opened from disk (no server, no CSP,
    its own CSS, no script at all)."""
    page.wait_for_timeout(settle_ms)   # an onerror or a fetch fires after the load
    assert page.evaluate("typeof window.pwned") == "undefined", page.evaluate("String(window.pwned)")
    assert page.title() != "pwned"
    assert sink.hits == [], sink.hits
    assert page.csp() == [], page.csp()
    assert page.watch.csp_messages() == [] and page.watch.errors == [], (page.watch.console, page.watch.errors)
    assert page.evaluate(_MARKUP, exported) == []


def visible_text(page):
    """What a person reads on the page (the rendered text, not the markup)."""
    return page.inner_text("body")
