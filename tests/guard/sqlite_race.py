"""Run as ``python -m tests.guard.sqlite_race DB_PATH``: 20 threads submit one participant's
response at once to a file-backed SQLite database (the embedded default) and the
status codes are printed as JSON. Used by tests/guard/test_bad_input.py; a process of
its own because the test database of pytest-django is in memory.
"""

from __future__ import annotations

import json
import os
import sys
import threading


def main(path: str) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from tests.factories import (
        client_for,
        consultation_factory,
        good_answers,
        key_factory,
        organisation_factory,
        survey_factory,
    )

    organisation = organisation_factory()
    _, secret = key_factory(organisation, "portal")
    survey = survey_factory(consultation_factory(organisation))
    connection.close()
    url = f"/api/v1/surveys/{survey.pk}/responses/"
    barrier = threading.Barrier(20)
    results: list[tuple[int, str]] = []

    def submit() -> None:
        from django.db import connection as thread_connection

        client = client_for(secret)
        barrier.wait()
        try:
            response = client.post(
                url, {"participant": "p1", "answers": good_answers()}, format="json"
            )
            results.append((response.status_code, response.get("Content-Type", "")))
        except Exception as exc:  # the test client re-raises a view's exception
            results.append((500, repr(exc)))
        finally:
            thread_connection.close()

    threads = [threading.Thread(target=submit) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1])
