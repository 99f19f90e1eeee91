"""Portal client for privacy-preserving consultations (``pip install ./clients/python``).

Fetch a survey's published scheme, distort a resident's answers on the portal with the
operating system's randomness, and submit only the distorted answers::

    from consultation_client import PortalClient, distort_answers

    client = PortalClient("https://consult.example.org", PORTAL_KEY)
    scheme = client.scheme(3)
    client.submit(3, "p-000123", distort_answers(scheme, {"sex": "F", "age": 43}))

Depends only on ``requests``.
"""

from consultation_client.distortion import (
    distort_answer,
    distort_answers,
    localise_question,
    memo_key,
    pick_language,
)
from consultation_client.http import ClientError, PortalClient, fetch_scheme

__version__ = "1.3.0"

__all__ = [
    "ClientError",
    "PortalClient",
    "__version__",
    "distort_answer",
    "distort_answers",
    "fetch_scheme",
    "localise_question",
    "memo_key",
    "pick_language",
]
