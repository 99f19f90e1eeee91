"""Typed helpers that read configuration from the environment.

Production differs from development only by environment variables; every
setting the project reads goes through these helpers so that a wrong value
fails at start-up with a message naming the variable. A new variable needs its row in
docs/operators/configuration.md: tests/test_docs.py fails, naming it, until it has one.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import dj_database_url


class ConfigurationError(RuntimeError):
    """A required environment variable is missing or malformed."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigurationError(f"{name} must be one of 1/0/true/false/yes/no/on/off, got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, object]:
    """Translate ``DATABASE_URL`` into a Django ``DATABASES['default']`` entry (dj-database-url).

    ``sqlite:///relative/path`` or ``sqlite:////absolute/path``, and
    ``postgres://user:password@host:port/name?sslmode=require`` (also ``postgresql://``);
    query options such as ``sslmode`` become the connection's ``OPTIONS``.
    """
    scheme = urlsplit(url).scheme
    if scheme not in {"sqlite", "postgres", "postgresql"}:
        raise ConfigurationError(
            f"DATABASE_URL has an unsupported scheme {scheme!r}; use sqlite:/// or postgres://"
        )
    if scheme == "sqlite":
        config = dict(dj_database_url.parse(url))
        config["NAME"] = config.get("NAME") or ":memory:"
        return config
    config = dict(
        dj_database_url.parse(
            url,
            conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
            conn_health_checks=env_bool("DATABASE_CONN_HEALTH_CHECKS", True),
        )
    )
    if not config.get("NAME"):
        raise ConfigurationError("DATABASE_URL names no database (postgres://.../NAME)")
    return config
