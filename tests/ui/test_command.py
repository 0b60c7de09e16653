"""``chats ui`` as a process: the one line it prints, its refusals, and a clean stop."""

import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

CHATS = [os.path.join(os.path.dirname(sys.executable), "chats")]


def _start(*args):
    return subprocess.Popen([*CHATS, "ui", "--no-open", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_it_prints_one_url_line_serves_it_and_stops_on_sigterm(empty_journal):
    proc = _start("--port", "0", "--local")
    try:
        line = proc.stdout.readline()
        match = re.fullmatch(r"claude-chats ui: (http://127\.0\.0\.1:(\d+)/\?token=([\w-]{20,}))\n", line)
        assert match, line
        url, port, token = match.groups()
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with browser.open(url, timeout=30) as answer:   # the token's redirect and its cookie, then the page
            assert answer.status == 200 and b'id="q"' in answer.read()
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/sessions", timeout=30)
            raise AssertionError("served without the token")
        except urllib.error.HTTPError as exc:
            assert exc.code == 403
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out == "" and token not in err   # nothing more on stdout; the token in no log line


def test_a_network_address_needs_allow_remote():
    proc = subprocess.run([*CHATS, "ui", "--no-open", "--host", "0.0.0.0"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--allow-remote" in lines[0] and "0.0.0.0" in lines[0]


def test_a_port_in_use_is_one_clear_line():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        proc = subprocess.run([*CHATS, "ui", "--no-open", "--port", str(port)], capture_output=True, text=True,
                              timeout=60)
    finally:
        taken.close()
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {port}" in lines[0] and "--port 0" in lines[0]
