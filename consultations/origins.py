"""CORS for portals: which web origins may call the API from a browser.

``django-cors-headers`` answers preflights (``OPTIONS`` with
``Access-Control-Request-Method``) before authentication, so a browser needs no key for
them; it adds the ``Access-Control-Allow-*`` headers only for an origin that
:func:`origin_is_allowed` accepts (its ``check_request_enabled`` signal). Every other
origin gets none, and the browser refuses the response.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest
from django.utils.translation import gettext as _

from consultations.models import PortalOrigin


class BadOrigin(ValueError):
    """Not ``scheme://host[:port]``; the message names the origin."""


def _not_an_origin(origin: Any, problem: str) -> str:
    return _("%(origin)s is not an origin: %(problem)s") % {
        "origin": repr(origin),
        "problem": problem,
    }


def normalise_origin(origin: Any) -> str:
    """``scheme://host[:port]`` in lower case, as browsers send it, or :class:`BadOrigin`."""
    if not isinstance(origin, str) or not origin.strip():
        raise BadOrigin(_not_an_origin(origin, _("use scheme://host[:port].")))
    text = origin.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise BadOrigin(_not_an_origin(text, _("use scheme://host[:port]."))) from None
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise BadOrigin(_not_an_origin(text, _("it needs http:// or https:// and a host name.")))
    if parts.path not in ("", "/") or parts.query or parts.fragment or "?" in text or "#" in text:
        raise BadOrigin(_not_an_origin(text, _("no path, query or fragment allowed.")))
    if parts.username is not None or parts.password is not None:
        raise BadOrigin(_not_an_origin(text, _("no user name or password allowed.")))
    if "*" in text or any(c.isspace() for c in text):
        raise BadOrigin(_not_an_origin(text, _("no wildcards or spaces allowed.")))
    host = parts.hostname.lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    default = {"http": 80, "https": 443}[parts.scheme]
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


# Listed origins, read at most every CORS_ORIGINS_CACHE_SECONDS per process (every
# cross-origin request asks); a change made in this process is seen at once.
_cache: dict[str, Any] = {"origins": frozenset(), "until": 0.0}
_lock = threading.Lock()


def forget_allowed_origins() -> None:
    with _lock:
        _cache["until"] = 0.0


def allowed_origins() -> frozenset[str]:
    now = time.monotonic()
    with _lock:
        if now < _cache["until"]:
            return frozenset(_cache["origins"])
    origins = frozenset(PortalOrigin.objects.values_list("origin", flat=True))
    with _lock:
        _cache["origins"] = origins
        _cache["until"] = now + float(getattr(settings, "CORS_ORIGINS_CACHE_SECONDS", 5))
    return origins


def origin_is_allowed(origin: str) -> bool:
    try:
        return normalise_origin(origin) in allowed_origins()
    except BadOrigin:
        return False


def cors_allow_listed_origins(sender: Any, request: HttpRequest, **kwargs: Any) -> bool:
    """Receiver of ``corsheaders.signals.check_request_enabled`` (see ``apps.py``)."""
    origin = request.headers.get("Origin")
    return bool(origin) and request.path_info.startswith("/api/") and origin_is_allowed(origin)
