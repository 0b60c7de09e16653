"""Whether a host name or address is this machine: what may see text unredacted.

Used by the Postgres URL check (a non-local host must use TLS) and by the
embedding providers (text sent to a non-local server leaves the machine).
"""

import ipaddress

LOCAL_NAMES = ("localhost",)
RESOLVED_NAMES = ("localhost.localdomain",)   # and every ``*.localhost``: local when they resolve to loopback


def is_local_host(host):
    """A Unix socket directory, ``localhost``, a loopback address, or a ``*.localhost`` name
    (or ``localhost.localdomain``) that resolves to loopback addresses only.

    A ``*.localhost`` name is not trusted by its spelling: many resolvers hand it to
    DNS, which may answer anything.
    """
    if host == "" or host.startswith("/") or host.startswith("@"):
        return True
    name = host.lower().rstrip(".")
    if name in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    if name.endswith(".localhost") or name in RESOLVED_NAMES:
        return resolves_to_loopback_only(name)
    return False


def resolves_to_loopback_only(name):
    import socket

    try:
        infos = socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(_loopback(a) for a in addresses)


def _loopback(address):
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False
