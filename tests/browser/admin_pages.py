"""Helpers of the admin browser tests: sign in, fill a question card, check that the page
fits its viewport and that axe-core finds no serious accessibility violation."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

PASSWORD = "a-long-passw0rd"
VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def signed_in_page(browser: Any, live_server: Any, *, viewport: str, language: str) -> Any:
    """A page of a new browser context, signed in as a superuser, in ``language``."""
    if not User.objects.filter(username="organiser").exists():
        User.objects.create_superuser("organiser", "organiser@example.org", PASSWORD)
    context = browser.new_context(
        viewport=VIEWPORTS[viewport],
        locale=language,
        extra_http_headers={"Accept-Language": language},
    )
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "organiser")
    page.fill("#id_password", PASSWORD)
    page.click('input[type="submit"]')
    page.wait_for_selector("#site-name")
    return page


def assert_fits_viewport(page: Any) -> None:
    """The page never scrolls sideways: its width is at most the viewport's."""
    width, viewport = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= viewport, f"{page.url}: page {width} px wide in a {viewport} px viewport"


def fill_list(page: Any, editor: str, values: list[str]) -> None:
    """Type ``values`` into a list editor, adding entries with its button."""
    items = page.locator(f"{editor} li input")
    while items.count() < len(values):
        page.locator(f"{editor} .list-add").click()
    for index, value in enumerate(values):
        items.nth(index).fill(value)


def fill_card(page: Any, index: int, **fields: Any) -> None:
    """Fill question card ``index`` as an organiser does (no JSON anywhere)."""
    prefix = f"#id_questions-{index}-"
    if "type" in fields:  # first: it shows the fields of its type
        page.select_option(prefix + "type", fields["type"])
    for name in ("key", "text", "range_low", "range_high", "step"):
        if name in fields:
            page.fill(prefix + name, str(fields[name]))
    if "categories" in fields:
        fill_list(page, f"#questions-{index} .field-categories .list-editor", fields["categories"])
    if "mechanism" in fields:
        page.select_option(prefix + "mechanism", fields["mechanism"])
    if "privacy" in fields:
        page.select_option(prefix + "privacy", fields["privacy"])
    for name, value in (fields.get("params") or {}).items():
        page.fill(f"{prefix}{fields['mechanism']}__{name}", str(value))
    for code, (text, labels) in (fields.get("translations") or {}).items():
        page.fill(f"{prefix}text_{code}", text)
        editor = f"#questions-{index} .field-labels_{code} .list-editor"
        for i, label in enumerate(labels):
            page.locator(f"{editor} li input").nth(i).fill(label)


def serious_accessibility_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [
        {"id": v["id"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in results.response["violations"]
        if v.get("impact") in ("serious", "critical")
    ]


def fill_condition(
    page: Any,
    prefix: str,
    attribute: str,
    *,
    answers: Any = None,
    op: str | None = None,
    number: Any = None,
    up_to: Any = None,
) -> None:
    """Build one condition row (``where_0``, ``quota_2``...) with its widgets: pick the
    question, then tick its answers, or choose a comparison and type a number."""
    page.select_option(f"#id_{prefix}_attribute", attribute)
    row = page.locator(f".condition-row:has(#id_{prefix}_attribute)")
    for answer in answers or []:
        row.locator(f".condition-categories input[value='{answer}']").check()
    if op is not None:
        page.select_option(f"#id_{prefix}_op", op)
    if number is not None:
        page.fill(f"#id_{prefix}_number", str(number))
    if up_to is not None:
        page.fill(f"#id_{prefix}_up_to", str(up_to))


def fill_quota(
    page: Any, index: int, attribute: str, low: Any, high: Any, **condition: Any
) -> None:
    """Quota ``index`` of the panel form, added with "Add a quota" when it is not shown yet:
    its condition (:func:`fill_condition`) and its fewest and most seats."""
    if page.locator(f"#quota-{index}").is_hidden():
        page.click("#add-quota")
    fill_condition(page, f"quota_{index}", attribute, **condition)
    page.fill(f"#id_quota_{index}_min", str(low))
    page.fill(f"#id_quota_{index}_max", str(high))
