"""Network helpers for multi-process clients (no JAX or torch imports)."""

import socket


def local_address_towards(address):
    """The local IP address the kernel would use to reach `address` ("host:port"), or None.
    A UDP socket's connect sends nothing: it only picks the route."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port)
        for family, _, _, _, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM):
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect(sockaddr)
                return s.getsockname()[0]
    except (OSError, ValueError):
        return None
    return None
