"""The TLS check judges where libpq will actually connect (issue 16, item 5).

Not where the URL seems to point: ``hostaddr`` wins over ``host`` (in the URL, its
``?hostaddr=`` parameter, or ``PGHOSTADDR``), a ``service`` takes its parameters from
the service files libpq reads, and a ``*.localhost`` name is trusted only when it
resolves to loopback addresses only.
"""

import socket

import pytest

from claude_chats.errors import InsecureConnectionError
from claude_chats.pgstore import url as dburl

REMOTE = "192.0.2.10"    # TEST-NET-1: never this machine


@pytest.mark.parametrize("url, environ", [
    (f"host=localhost hostaddr={REMOTE} dbname=chats", {}),
    (f"postgresql://localhost/chats?hostaddr={REMOTE}", {}),
    (f"postgresql:///chats?host=/var/run/postgresql&hostaddr={REMOTE}", {}),
    ("postgresql://localhost/chats", {"PGHOSTADDR": REMOTE}),
    ("postgresql:///chats", {"PGHOSTADDR": REMOTE}),
    (f"postgresql://localhost,localhost/chats?hostaddr=127.0.0.1,{REMOTE}", {}),
])
def test_hostaddr_is_where_libpq_connects(url, environ):
    with pytest.raises(InsecureConnectionError, match=REMOTE):
        dburl.check(url, environ=environ)


def test_hostaddr_on_this_machine_is_local():
    dburl.check("host=db.example.com hostaddr=127.0.0.1 dbname=chats", environ={})
    dburl.check(f"host=localhost hostaddr={REMOTE} sslmode=verify-full dbname=chats", environ={})


def write_service(path, text):
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("how", ["service= in the URL", "PGSERVICE", "PGSERVICEFILE", "PGSYSCONFDIR"])
def test_a_service_file_is_read_like_libpq_reads_it(tmp_path, how):
    remote = f"# comment\n[other]\nhost=localhost\n\n[chats]\nhost={REMOTE}\ndbname=chats\n[after]\nhost=localhost\n"
    if how == "PGSYSCONFDIR":
        write_service(tmp_path / "pg_service.conf", remote)
        environ = {"PGSYSCONFDIR": str(tmp_path), "HOME": str(tmp_path / "nohome"), "PGSERVICE": "chats"}
    else:
        environ = {"PGSERVICEFILE": write_service(tmp_path / "services", remote)}
        if how == "PGSERVICEFILE":
            environ["PGSERVICE"] = "chats"
    url = "service=chats" if how == "service= in the URL" else "postgresql:///chats"
    if how == "PGSERVICE":
        environ = {"HOME": str(tmp_path)}
        write_service(tmp_path / ".pg_service.conf", remote)
        environ["PGSERVICE"] = "chats"
    with pytest.raises(InsecureConnectionError, match=REMOTE):
        dburl.check(url, environ=environ)


def test_a_service_looked_up_in_ldap_has_an_unknown_target(tmp_path):
    environ = {"PGSERVICEFILE": write_service(tmp_path / "s", "[chats]\nldap://ldap.example.com/dc=x?y\n")}
    with pytest.raises(InsecureConnectionError, match="LDAP"):
        dburl.check("service=chats", environ=environ)
    dburl.check("service=chats sslmode=verify-full", environ=environ)


def test_a_service_file_fills_in_only_what_the_url_leaves_out(tmp_path):
    environ = {"PGSERVICEFILE": write_service(tmp_path / "s", "[chats]\nhost=localhost\nsslmode=disable\n")}
    dburl.check("service=chats", environ=environ)                      # local: no TLS needed
    environ = {"PGSERVICEFILE": write_service(tmp_path / "t", f"[chats]\nhost={REMOTE}\nsslmode=verify-full\n")}
    dburl.check("service=chats", environ=environ)                      # the service asks for TLS
    with pytest.raises(InsecureConnectionError):
        dburl.check("service=chats sslmode=prefer", environ=environ)   # the URL's own sslmode wins


def _loopback_only(name):
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except OSError:
        return False
    return bool(addresses) and all(a.startswith("127.") or a == "::1" for a in addresses)


@pytest.mark.parametrize("name", ["db.localhost", "evil.example.localhost"])
def test_a_dot_localhost_name_is_local_only_when_it_resolves_to_loopback_only(name):
    url = f"postgresql://chats@{name}/chats"
    if _loopback_only(name):            # this machine's resolver maps it to loopback (systemd-resolved does)
        dburl.check(url, environ={})
    else:                               # here it does not resolve: libpq would ask DNS, so it is not trusted
        with pytest.raises(InsecureConnectionError, match=name):
            dburl.check(url, environ={})


def test_doctor_and_sync_see_the_hostaddr_too(monkeypatch):
    """Through the CLI: doctor fails its TLS check, sync refuses before any byte leaves."""
    import json

    from click.testing import CliRunner

    from claude_chats.cli import main

    monkeypatch.setenv("DATABASE_URL", f"host=localhost hostaddr={REMOTE} dbname=chats connect_timeout=1")
    doctor = CliRunner().invoke(main, ["doctor", "--json"], catch_exceptions=False)
    checks = {c["name"]: c for c in json.loads(doctor.output)}
    assert checks["tls"]["status"] == "fail" and REMOTE in checks["tls"]["detail"]
    sync = CliRunner().invoke(main, ["sync"], catch_exceptions=False)
    assert sync.exit_code == 1 and f"refusing to connect to {REMOTE} without TLS" in sync.output
