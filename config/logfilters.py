"""No client address in any log (issue 27).

:class:`NoAddresses` is a logging filter that replaces every IPv4 or IPv6 address in a
record's message (after formatting its arguments) with ``[address removed]``. It sits on
Django's console handler (config/settings.py) and on gunicorn's error and access logs
(:class:`GunicornLogger`, named by ``logger_class`` in config/gunicorn.py): gunicorn
writes ``Invalid request from ip=...`` on a malformed request line and the address of
clients in some connection messages, which no access-log format setting reaches.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from typing import Any

REMOVED = "[address removed]"
# Candidate tokens: hex digits, dots and colons (and IPv6 brackets / zone ids); each is
# checked with ipaddress, so times such as 08:12:05 and versions such as 1.2 are kept.
_CANDIDATE = re.compile(r"[0-9A-Fa-f:.]*[:.][0-9A-Fa-f:.]*[0-9A-Fa-f](?:%[\w.-]+)?")


def _scrub_token(match: re.Match[str]) -> str:
    token = match.group(0)
    for candidate in (token, token.split("%")[0]):
        try:
            ipaddress.ip_address(candidate)
        except ValueError:
            continue
        return REMOVED
    # host:port (IPv4) forms
    host, _sep, port = token.rpartition(":")
    if host and port.isdigit():
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return token
        return f"{REMOVED}:{port}"
    return token


def scrub(text: str) -> str:
    """``text`` with every IP address replaced by ``[address removed]``."""
    return _CANDIDATE.sub(_scrub_token, text)


class NoAddresses(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave the record as it is
            return True
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


try:
    from gunicorn.glogging import Logger as _GunicornLogger
except ImportError:  # pragma: no cover - gunicorn is a runtime dependency
    _GunicornLogger = object  # type: ignore[assignment,misc]


class GunicornLogger(_GunicornLogger):  # type: ignore[misc,valid-type]
    """gunicorn's logger with :class:`NoAddresses` on its error and access logs."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            log.addFilter(NoAddresses())
            for handler in log.handlers:
                handler.addFilter(NoAddresses())
