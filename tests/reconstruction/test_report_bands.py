"""Reports a council can read (issue 32, item 8): a continuous question in useful round
bands (the single values only in the export), each question opening with one plain
sentence of what the data say and how sure, in the reader's language."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest

from consultations.models import Organisation
from tests.reconstruction.data import distorted_consultation

pytestmark = pytest.mark.django_db


@pytest.fixture
def report(analyst, django_capture_on_commit_callbacks) -> str:
    data = distorted_consultation(Organisation.objects.get(slug="north"), n=1500, seed=8)
    with django_capture_on_commit_callbacks(execute=True):
        created = analyst.post(f"/api/v1/surveys/{data.profile.pk}/reports/", {}, format="json")
    assert created.status_code == 202
    return created.json()["url"]


def _section(html: str, key: str) -> str:
    return html.split(f'<section id="q-{key}">')[1].split("</section>")[0]


def test_a_continuous_question_reads_in_useful_bands(analyst, report) -> None:
    document = analyst.get(f"{report}download/?format=json").json()
    age = next(q for q in document["questions"] if q["key"] == "age")
    bands = age["reconstructed"]["bands"]
    cells = age["reconstructed"]["counts"]
    assert 2 <= len(bands["labels"]) <= 20 < len(cells) + 10
    for j, (first, last) in enumerate(bands["cells"]):
        if bands["suppressed"][j]:
            continue
        low, high = bands["ci95"][j]
        # Useful: the half-width at most a quarter of the count.
        assert (high - low) / 2 <= bands["counts"][j] / 4 + 1e-9
        # Round edges (multiples of the width).
        assert bands["edges"][j] % bands["width"] == 0
        shown = cells[first : last + 1]
        if None not in shown:
            assert bands["counts"][j] == pytest.approx(sum(shown))
    html = analyst.get(f"{report}download/?format=html").content.decode()
    section = _section(html, "age")
    rows = re.findall(r"<tr>\s*<td>", section.split("<tbody>")[1])
    assert len(rows) == len(bands["labels"])  # bands, not single values
    assert "<th>band</th>" in section and "<th>naive</th>" not in section
    # The export keeps the full lattice.
    table = pd.read_csv(io.BytesIO(analyst.get(f"{report}export/").content))
    assert (table["question"] == "age").sum() == len(cells)


def test_every_question_opens_with_a_plain_sentence_in_the_readers_language(
    analyst, report
) -> None:
    opening = {}
    for language in ("en", "de", "pl"):
        html = analyst.get(f"{report}download/?format=html&lang={language}").content.decode()
        opening[language] = {
            key: re.search(r'<p class="summary">(.*?)</p>', _section(html, key)).group(1)
            for key in ("sex", "district", "age")
        }
    assert opening["en"]["sex"].startswith("The most common answer is “")
    assert "% of the 1,500 participants (95% interval " in opening["en"]["sex"]
    assert opening["en"]["sex"].endswith(("a fairly precise figure.", "a rough figure."))
    assert opening["en"]["age"].startswith("The largest group is ")
    assert opening["de"]["sex"].startswith("Die häufigste Antwort ist „")
    assert "der 1.500 Teilnehmenden" in opening["de"]["sex"]
    assert opening["pl"]["age"].startswith("Największa grupa to ")
