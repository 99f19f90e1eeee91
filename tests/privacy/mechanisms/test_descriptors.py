"""One descriptor per mechanism (issue 24, item 5): every list of mechanisms is read from it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from privacy.mechanisms import CONTINUOUS, DISCRETE, noise_model, report_sentence

ROOT = Path(__file__).resolve().parents[3]


def test_the_model_schemes_and_client_lists_are_the_descriptors():
    from privacy import client
    from surveys import models, schemes

    assert tuple(DISCRETE) == models.DISCRETE_MECHANISMS
    assert tuple(CONTINUOUS) == models.CONTINUOUS_MECHANISMS
    assert set(models.NEGATIVE_MECHANISMS) == {
        "negative_uniform",
        "negative_gaussian",
        "negative_manual",
    }
    assert {m.name: m.params for m in DISCRETE.values()} == schemes.DISCRETE_MECHANISMS
    assert {m.name: m.params for m in CONTINUOUS.values()} == schemes.CONTINUOUS_MECHANISMS
    assert set(DISCRETE) == client.CHANNEL_MECHANISMS | client.AS_IS_MECHANISMS


def test_the_portal_clients_know_every_mechanism():
    """The JS and Python clients ship apart from the server, so they spell the names out;
    they must name exactly the descriptors' mechanisms."""
    js = (ROOT / "clients/js/src/distort.js").read_text()
    py = (ROOT / "clients/python/src/consultation_client/distortion.py").read_text()
    for name in (*DISCRETE, *CONTINUOUS):
        assert f'"{name}"' in js, name
        assert f'"{name}"' in py, name
    quoted = set(re.findall(r'"((?:additive|negative|retention|randomised)_[a-z_]+)"', js + py))
    assert quoted <= set(DISCRETE) | set(CONTINUOUS)


@pytest.mark.parametrize("name", sorted(set(DISCRETE) | set(CONTINUOUS)))
def test_every_mechanism_has_a_report_sentence(name):
    params = {
        "retain": 0.7, "half_width": 10.0, "sigma": 2.0, "scale": 3.0,
        "epsilon": 2.0, "sensitivity": 10.0,
    }  # fmt: skip
    mechanism = DISCRETE.get(name) or CONTINUOUS[name]
    found = report_sentence(
        {"name": name, **{p: params[p] for p in mechanism.params if p in params}}
    )
    assert found is not None
    template, filled = found
    assert (template % filled) if filled else template


def test_noise_models_are_built_from_the_descriptors():
    assert noise_model("additive_laplace", scale=2.0).std == pytest.approx(2.0 * np.sqrt(2.0))
    uniform = CONTINUOUS["additive_uniform"]
    assert uniform.noise_variance({"half_width": 3.0}) == pytest.approx(3.0)
    rr = CONTINUOUS["retention_replacement"].noise((0.0, 10.0), {"retain": 0.5})
    assert (rr.low, rr.high) == (0.0, 10.0)
    with pytest.raises(ValueError, match="unknown noise model"):
        noise_model("additive_cauchy", scale=1.0)
    assert DISCRETE["negative_gaussian"].ordinal_only
    np.testing.assert_allclose(DISCRETE["none"].channel(3, {}), np.eye(3))
