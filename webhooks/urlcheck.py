"""Which webhook URLs the server may call: https, and only public addresses; and calling
exactly the address that was checked.

A URL that resolves to a private, loopback, link-local or otherwise non-global address
would let an organisation make the server call into its own network (server-side
request forgery); it is refused unless ``WEBHOOKS_ALLOW_PRIVATE`` is set (development,
tests). IPv6 forms of IPv4 addresses (NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``,
IPv4-mapped) are judged by the IPv4 address they embed, and other special-purpose IPv6
ranges (Teredo, local-use NAT64, deprecated forms) are refused. Only the scheme's standard
port (443, or 80 for http) is called unless ``WEBHOOKS_ALLOWED_PORTS`` lists others.
Plain http is refused unless ``WEBHOOKS_ALLOW_HTTP`` is set. The check runs when
a webhook is registered and again before every delivery (DNS may have changed).

Checking a name and then letting the HTTP library resolve it again leaves a window (DNS
rebinding: a public address for the check, a private one a moment later for the
connection). :func:`checked_target` resolves the name once and checks every address it
returns; :func:`post_pinned` then connects to one of those checked addresses while the
request keeps the name in its ``Host`` header and, for https, in the TLS server name
(SNI) and the certificate check. The library never resolves the name again.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.utils.translation import gettext_noop
from requests.adapters import HTTPAdapter

from privacy.mechanisms.messages import InputError, Message


class UnsafeUrl(InputError):
    """A URL the server may not call. ``message`` names the problem as a template and its
    parameters, so a refusal met at delivery time (in a worker) is stored with them and
    read in the organiser's language; ``str()`` is the English text."""


@dataclass(frozen=True)
class Target:
    """A webhook URL with the addresses its host resolved to when it was checked."""

    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == default else f"{name}:{self.port}"


def checked_target(url: str) -> Target:
    """Resolve ``url``'s host once and check it; raise :class:`UnsafeUrl` naming the
    problem, or return the target with the checked addresses."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeUrl(
            gettext_noop("%(url)s is not a valid URL: %(problem)s."),
            url=repr(url),
            problem=str(exc),
        ) from None
    allow_http = bool(getattr(settings, "WEBHOOKS_ALLOW_HTTP", False))
    if parts.scheme != "https" and not (allow_http and parts.scheme == "http"):
        raise UnsafeUrl(
            gettext_noop(
                "Webhook URLs must use https, got %(scheme)s (WEBHOOKS_ALLOW_HTTP allows http)."
            ),
            scheme=repr(parts.scheme) if parts.scheme else Message(gettext_noop("no scheme")),
        )
    host = parts.hostname
    if not host:
        raise UnsafeUrl(gettext_noop("%(url)s has no host."), url=repr(url))
    if parts.username or parts.password:
        raise UnsafeUrl(gettext_noop("Webhook URLs may not carry a user name or password."))
    standard = 443 if parts.scheme == "https" else 80
    port = port or standard
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        raise UnsafeUrl(
            gettext_noop("The host %(host)s does not resolve."), host=repr(host)
        ) from None
    addresses: list[str] = []
    allow_private = bool(getattr(settings, "WEBHOOKS_ALLOW_PRIVATE", False))
    for info in infos:
        text = str(info[4][0]).split("%")[0]
        if not allow_private:
            _refuse_non_public(host, ipaddress.ip_address(text))
        if text not in addresses:
            addresses.append(text)
    if not addresses:
        raise UnsafeUrl(gettext_noop("The host %(host)s does not resolve."), host=repr(host))
    allowed = [str(p) for p in getattr(settings, "WEBHOOKS_ALLOWED_PORTS", [])]
    if port != standard and "*" not in allowed and str(port) not in allowed:
        raise UnsafeUrl(
            gettext_noop(
                "Webhook URLs use the standard port %(standard)s, got %(port)s "
                "(WEBHOOKS_ALLOWED_PORTS allows others)."
            ),
            standard=standard,
            port=port,
        )
    # IPv4 first: the receivers we know of listen there at least.
    addresses.sort(key=lambda a: ":" in a)
    return Target(url, parts.scheme, host, port, tuple(addresses))


# IPv6 ranges that carry an IPv4 address inside (RFC 6052 NAT64, RFC 3056 6to4, RFC 4291
# IPv4-mapped): the address is judged by the IPv4 address it leads to.
_EMBEDS_IPV4 = {
    ipaddress.IPv6Network("64:ff9b::/96"): lambda a: ipaddress.IPv4Address(int(a) & 0xFFFFFFFF),
    ipaddress.IPv6Network("::ffff:0:0/96"): lambda a: a.ipv4_mapped,
    ipaddress.IPv6Network("2002::/16"): lambda a: a.sixtofour,
}
# Special-purpose IPv6 ranges never called (IANA's registry): local-use NAT64 (RFC 8215),
# Teredo tunnels (RFC 4380), the deprecated IPv4-compatible and site-local ranges, the
# IPv4-translated range (RFC 2765), discard-only (RFC 6666) and documentation prefixes.
_SPECIAL_IPV6 = tuple(
    ipaddress.IPv6Network(net)
    for net in (
        "64:ff9b:1::/48",
        "2001::/32",
        "::/96",
        "::ffff:0:0:0/96",
        "fec0::/10",
        "100::/64",
        "2001:db8::/32",
        "3fff::/20",
    )
)


def _refuse_non_public(host: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    """Raise :class:`UnsafeUrl` unless ``address`` (and any IPv4 address it embeds) is a
    public unicast address outside IPv6's special-purpose ranges."""
    shown = str(address)
    special = None
    if isinstance(address, ipaddress.IPv6Address):
        for network, embedded in _EMBEDS_IPV4.items():
            if address in network:
                inner = embedded(address)
                shown = f"{address} (IPv4 {inner})"
                address = inner
                break
        else:
            special = next((net for net in _SPECIAL_IPV6 if address in net), None)
    if not address.is_global or address.is_multicast:
        raise UnsafeUrl(
            gettext_noop(
                "The host %(host)s resolves to %(address)s, a private or loopback "
                "address; webhooks may only call public addresses "
                "(WEBHOOKS_ALLOW_PRIVATE allows it)."
            ),
            host=repr(host),
            address=shown,
        )
    if special is not None:
        raise UnsafeUrl(
            gettext_noop(
                "The host %(host)s resolves to %(address)s, in the special-purpose IPv6 "
                "range %(range)s; webhooks may only call public addresses "
                "(WEBHOOKS_ALLOW_PRIVATE allows it)."
            ),
            host=repr(host),
            address=shown,
            range=str(special),
        )


def check_url(url: str) -> None:
    """Raise :class:`UnsafeUrl` naming the problem, or return for a URL the server may call."""
    checked_target(url)


class PinnedAdapter(HTTPAdapter):
    """A transport adapter that connects to ``address`` whatever host the URL names.

    The connection pool is keyed by the address; for https the TLS server name and the
    certificate's host name check use the URL's host, so a pinned connection is verified
    exactly as an ordinary one.
    """

    def __init__(self, target: Target, address: str) -> None:
        self.target = target
        self.address = address
        super().__init__(max_retries=0)

    def get_connection_with_tls_context(
        self, request: Any, verify: Any, proxies: Any = None, cert: Any = None
    ) -> Any:
        host_params, pool_kwargs = self.build_connection_pool_key_attributes(request, verify, cert)
        if host_params["scheme"] == "https":
            pool_kwargs = {
                **pool_kwargs,
                "server_hostname": self.target.host,
                "assert_hostname": self.target.host,
            }
        return self.poolmanager.connection_from_host(
            host=self.address,
            port=host_params["port"],
            scheme=host_params["scheme"],
            pool_kwargs=pool_kwargs,
        )


NO_PROXIES: dict[str, str | None] = {"http": None, "https": None, "all": None}


def post_pinned(
    target: Target, *, data: bytes, headers: dict[str, str], timeout: float
) -> requests.Response:
    """POST to ``target.url`` over a connection to one of its checked addresses (the first
    that accepts a connection), never resolving its host again; no proxies, no redirects."""
    last: requests.RequestException | None = None
    for address in target.addresses:
        with requests.Session() as session:
            adapter = PinnedAdapter(target, address)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            try:
                return session.post(
                    target.url,
                    data=data,
                    headers={**headers, "Host": target.host_header},
                    timeout=timeout,
                    allow_redirects=False,
                    # No proxy from the environment (the connection goes to the address);
                    # a CA bundle from it (REQUESTS_CA_BUNDLE) still applies.
                    proxies=NO_PROXIES,
                )
            except requests.ConnectionError as exc:
                last = exc
    assert last is not None
    raise last
