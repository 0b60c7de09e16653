"""``chats ui``'s process: bind loopback, print the one line with the URL and its token, serve until stopped.

The socket is bound before the line is printed (``--port 0`` then says which port it got), the
searcher is warmed in the background (the first search of the page does not pay for loading the
model and the index), and uvicorn serves without an access log: the log would hold the token.
"""

import ipaddress
import signal
import socket
import sys
import threading
import webbrowser

from ..errors import ConfigError
from . import guard

DEFAULT_PORT = 8765


def is_loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host, port):
    """A listening socket on ``host``:``port`` (0: a free port), or ``ConfigError`` in one line."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        if port and exc.errno in (98, 48):   # EADDRINUSE (Linux, macOS)
            raise ConfigError(f"port {port} on {host} is in use (another `chats ui`?): pass --port N, "
                              "or --port 0 for any free port") from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def hosts_for(host, port):
    """The Host headers the Guard accepts: this server's own address and port, nothing else."""
    if is_loopback(host):
        return [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
    return [f"{host}:{port}"]


def serve(host="127.0.0.1", port=DEFAULT_PORT, allow_remote=False, open_browser=True, use_postgres=True,
          out=None):
    """Run the viewer until SIGINT or SIGTERM."""
    import uvicorn

    from ..stores import open_searcher
    from .app import create_app

    if not is_loopback(host) and not allow_remote:
        raise ConfigError(f"--host {host} would serve every conversation you ever had to the network: "
                          "pass --allow-remote as well if you mean it (anyone who gets the URL reads them all)")
    sock = bind(host, port)
    port = sock.getsockname()[1]
    token = guard.new_token()
    searcher = open_searcher(use_postgres=use_postgres, for_model=True)
    app = create_app(searcher, token, hosts_for(host, port))
    shown = "127.0.0.1" if host in ("localhost", "127.0.0.1") else host
    url = f"http://{shown}:{port}/?token={token}"
    out = out or sys.stdout
    if not is_loopback(host):
        print(f"warning: serving on {host}: anyone who can reach it and has the URL reads every conversation",
              file=sys.stderr)
    early = []   # a stop asked for between the URL line and uvicorn's own handlers
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, frame: early.append(number))
    print(f"claude-chats ui: {url}", file=out, flush=True)
    threading.Thread(target=searcher.warm, name="warm", daemon=True).start()
    if open_browser:
        threading.Timer(0.3, lambda: webbrowser.open(url)).start()
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2,
                            server_header=False)
    server = _server_class(uvicorn, early)(config)
    try:
        server.run(sockets=[sock])
    finally:
        searcher.close()
        sock.close()


def _server_class(uvicorn, early):
    class Server(uvicorn.Server):
        """uvicorn's server, but a stop asked for (Ctrl-C, SIGTERM) ends the process cleanly (exit 0):
        uvicorn re-raises the signal once it has shut down, which Click reports as "Aborted!"; and a
        stop asked for before uvicorn listened for it (``early``) stops it as soon as it has started."""

        def handle_exit(self, sig, frame):
            super().handle_exit(sig, frame)
            getattr(self, "_captured_signals", []).clear()

        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if early:
                self.should_exit = True

    return Server
