"""CORS for portals: which web origins may call the API from a browser.

``django-cors-headers`` answers preflights (``OPTIONS`` with
``Access-Control-Request-Method``) before authentication, so a browser needs no key for
them; it adds the ``Access-Control-Allow-*`` headers only for an origin that
:func:`cors_allow_listed_origins` accepts (its ``check_request_enabled`` signal). Every
other origin gets none, and the browser refuses the response.

Origins belong to organisations (issue 27): an origin gets the headers only for objects
of an organisation that lists it. For a survey's paths (``/api/v1/surveys/{id}/...``:
the scheme, submissions, withdrawals) that is the survey's organisation; for any other
request with a key, the key's organisation (the only one whose objects it reaches). A
preflight to a path that names no survey carries no data and passes for any listed
origin; the actual request is checked again.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest
from django.utils.translation import gettext as _

from consultations.models import ApiKey, PortalOrigin


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
_cache: dict[str, Any] = {"origins": frozenset(), "owners": {}, "surveys": {}, "until": 0.0}
_lock = threading.Lock()


def forget_allowed_origins() -> None:
    with _lock:
        _cache["until"] = 0.0


def origin_owners() -> dict[str, frozenset[int]]:
    """Listed origin -> the organisations that list it."""
    now = time.monotonic()
    with _lock:
        if now < _cache["until"]:
            return dict(_cache["owners"])
    owners: dict[str, set[int]] = {}
    for origin, organisation in PortalOrigin.objects.values_list("origin", "organisation_id"):
        owners.setdefault(origin, set()).add(organisation)
    frozen = {origin: frozenset(ids) for origin, ids in owners.items()}
    with _lock:
        _cache["owners"] = frozen
        _cache["origins"] = frozenset(frozen)
        _cache["surveys"] = {}
        _cache["until"] = now + float(getattr(settings, "CORS_ORIGINS_CACHE_SECONDS", 5))
    return frozen


def allowed_origins() -> frozenset[str]:
    return frozenset(origin_owners())


def origin_is_allowed(origin: str) -> bool:
    try:
        return normalise_origin(origin) in allowed_origins()
    except BadOrigin:
        return False


_survey_owner: Callable[[int], int | None] | None = None


def set_survey_owner(lookup: Callable[[int], int | None]) -> None:
    """Called by ``SurveysConfig.ready``: survey id -> its organisation id (or None)."""
    global _survey_owner
    _survey_owner = lookup


_SURVEY_PATH = re.compile(r"^/api/v1/surveys/(\d{1,18})/")


def _survey_organisation(survey_id: int) -> int | None:
    with _lock:
        surveys = _cache.setdefault("surveys", {})
        if survey_id in surveys:
            return surveys[survey_id]  # type: ignore[no-any-return]
    # The surveys app (above this one) registers how a survey's organisation is found.
    found = _survey_owner(survey_id) if _survey_owner is not None else None
    with _lock:
        surveys = _cache.setdefault("surveys", {})
        if len(surveys) > 10_000:
            surveys.clear()
        surveys[survey_id] = found
    return found


def owner_of_request(request: HttpRequest) -> int | None:
    """The organisation whose object ``request`` asks for: the survey's for a survey's
    paths, else the key's; ``None`` when neither is known (a keyless preflight)."""
    match = _SURVEY_PATH.match(request.path_info)
    if match:
        return _survey_organisation(int(match.group(1))) or -1
    user = getattr(request, "user", None)
    if isinstance(user, ApiKey):
        return int(user.organisation_id)
    return None


def cors_allow_listed_origins(sender: Any, request: HttpRequest, **kwargs: Any) -> bool:
    """Receiver of ``corsheaders.signals.check_request_enabled`` (see ``apps.py``)."""
    origin = request.headers.get("Origin")
    if not origin or not request.path_info.startswith("/api/"):
        return False
    try:
        owners = origin_owners().get(normalise_origin(origin))
    except BadOrigin:
        return False
    if not owners:
        return False
    owner = owner_of_request(request)
    return owner is None or owner in owners
