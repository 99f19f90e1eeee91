"""Which webhook URLs the server may call: https, and only public addresses.

A URL that resolves to a private, loopback, link-local or otherwise non-global address
would let an organisation make the server call into its own network (server-side
request forgery); it is refused unless ``WEBHOOKS_ALLOW_PRIVATE`` is set (development,
tests). Plain http is refused unless ``WEBHOOKS_ALLOW_HTTP`` is set. The check runs when
a webhook is registered and again before every delivery (DNS may have changed).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings


class UnsafeUrl(ValueError):
    pass


def check_url(url: str) -> None:
    """Raise :class:`UnsafeUrl` naming the problem, or return for a URL the server may call."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeUrl(f"{url!r} is not a valid URL: {exc}.") from None
    allow_http = bool(getattr(settings, "WEBHOOKS_ALLOW_HTTP", False))
    if parts.scheme != "https" and not (allow_http and parts.scheme == "http"):
        raise UnsafeUrl(
            f"Webhook URLs must use https, got {parts.scheme or 'no scheme'!r} "
            "(WEBHOOKS_ALLOW_HTTP allows http)."
        )
    host = parts.hostname
    if not host:
        raise UnsafeUrl(f"{url!r} has no host.")
    if parts.username or parts.password:
        raise UnsafeUrl("Webhook URLs may not carry a user name or password.")
    if getattr(settings, "WEBHOOKS_ALLOW_PRIVATE", False):
        return
    try:
        infos = socket.getaddrinfo(host, port or 443, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        raise UnsafeUrl(f"The host {host!r} does not resolve.") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if not address.is_global or address.is_multicast:
            raise UnsafeUrl(
                f"The host {host!r} resolves to {address}, a private or loopback address; "
                "webhooks may only call public addresses (WEBHOOKS_ALLOW_PRIVATE allows it)."
            )
