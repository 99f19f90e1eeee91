"""The container health check: ``python -m config.healthcheck`` exits 0 when /healthz is 200.

Used by ``docker-compose.yml``'s ``web`` service. It asks the gunicorn of the same container,
on the port of ``GUNICORN_BIND`` (``0.0.0.0:8000`` by default), with the plain
``localhost`` host name; ``config.health.HealthzMiddleware`` answers it whatever
``DJANGO_ALLOWED_HOSTS`` says. Standard library only, so it starts fast.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request


def main() -> int:
    port = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000").rsplit(":", 1)[-1]
    url = f"http://localhost:{port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError as exc:
        print(f"{url}: {exc}", file=sys.stderr)
        return 1
    if status != 200:
        print(f"{url}: HTTP {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
