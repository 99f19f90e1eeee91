"""The one format of an audit trail's ``actor`` (and a job's ``requested_by``).

- ``key:<prefix>``: an API key (its public prefix, never the secret);
- ``staff:<username>``: a staff user of the admin site;
- a bare word for the system itself: ``schedule``, ``manage.py``, ``demo``, ``tests``.
"""

from __future__ import annotations

from typing import Any

from consultations.models import ApiKey


def audit_actor(user: Any) -> str:
    """The actor string of whoever made a request (an API key or a staff user)."""
    if isinstance(user, ApiKey):
        return f"key:{user.prefix}"
    username = user.get_username() if hasattr(user, "get_username") else ""
    if not username:
        raise ValueError("an audited action needs an API key or a signed-in staff user")
    return f"staff:{username}"
