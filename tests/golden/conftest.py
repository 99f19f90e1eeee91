"""Golden pools get seeded record keys, so results perturbed by the cell-key method
(exact attributes, issue 26) are the same in every run."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.mechanisms import cellkey


@pytest.fixture(autouse=True)
def _seeded_record_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(26)

    def seeded(count: int) -> list[int]:
        return rng.integers(0, cellkey.KEY_MODULUS, size=count, dtype=np.int64).tolist()

    monkeypatch.setattr(cellkey, "new_record_keys", seeded)
