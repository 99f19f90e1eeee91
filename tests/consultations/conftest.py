"""The same fixtures as the surveys tests (organisations, keys, surveys)."""

from tests.surveys.conftest import (  # noqa: F401
    _clear_cache,
    _forget_surveys,
    consultation,
    other_tenant,
    survey,
    tenant,
)
