"""Whether a host name or address is this machine: what may see text unredacted.

Used by the Postgres URL check (a non-local host must use TLS) and by the
embedding providers (text sent to a non-local server leaves the machine).
"""

import ipaddress

LOCAL_NAMES = ("localhost", "localhost.localdomain")


def is_local_host(host):
    """A Unix socket directory, ``localhost`` or a loopback address."""
    if host == "" or host.startswith("/") or host.startswith("@"):
        return True
    if host.lower() in LOCAL_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
