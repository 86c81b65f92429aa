"""The web chat page: served with its assets and a strict CSP, and used in a real browser
(Debian's chromium driven by Playwright): send, stream, tool call, permission, a tool's question,
abort, sessions."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import httpx
import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTEFACTS = Path(os.environ.get("CRAB_TEST_ARTEFACTS") or Path(tempfile.gettempdir()) / "crab-http-artefacts")


def test_the_page_and_its_assets_need_no_token_and_carry_a_strict_csp(shared):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        assert '<script src="/assets/app.js"' in page.text and "http" not in page.text.split("<body>")[1]
        js = client.get("/assets/app.js")
        assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
        assert client.get("/assets/app.css").status_code == 200
        assert client.get("/assets/../settings.py").status_code == 404
        assert client.get("/assets/nothing.js").status_code == 404


def test_web_false_serves_no_page(serve, home):
    home.token("laptop")
    home.configure("[plugins.http]\nport = 0\nweb = false\n")
    served = serve()
    with httpx.Client(base_url=served.url, timeout=30) as client:
        assert client.get("/").status_code == 404
    assert served.stop() == 0


@pytest.fixture
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (apt-get install chromium): the browser test skips")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: the browser test skips")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield launched
        launched.close()


def test_the_page_in_a_real_browser(shared, browser):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(shared.url + "/")
    page.fill("#token", "crab_wrong")
    page.click("#login button")
    page.wait_for_selector("#status:has-text('401')")
    page.fill("#token", shared.token)
    page.click("#login button")
    page.wait_for_selector("#composer:not([hidden])")

    # a streamed Markdown answer; HTML in it is shown as text, never run
    page.fill("#input", "hello **bold** <img src=x onerror=alert(1)>")
    page.press("#input", "Enter")
    page.wait_for_selector(".assistant strong:has-text('bold')")
    assert page.locator(".assistant img").count() == 0
    assert "<img src=x" in page.locator(".assistant").last.inner_text()

    # a tool call folded with its result, after the permission question answered with a button
    page.fill("#input", "jot buy milk")
    page.press("#input", "Enter")
    page.wait_for_selector(".ask button[data-answer='once']")
    page.click(".ask button[data-answer='once']")
    page.wait_for_selector("details.tool summary:has-text('✓')")
    page.wait_for_selector(".assistant:has-text('jot said: noted buy milk')")
    assert page.locator("details.tool").last.get_attribute("open") is None  # folded
    page.locator("details.tool summary").last.click()
    assert page.locator("details.tool pre").last.inner_text() == "noted buy milk"

    # a tool's question (as crab-plan's approval asks): its choices are buttons
    page.fill("#input", "choose colour")
    page.press("#input", "Enter")
    page.wait_for_selector(".ask:has-text('Which colour?') button[data-choice='blue']")
    page.click(".ask button[data-choice='blue']")
    page.wait_for_selector(".ask:has-text('→ blue')")
    page.wait_for_selector(".assistant:has-text('choose said: picked blue')")

    # abort a long answer
    page.fill("#input", "slow please")
    page.press("#input", "Enter")
    page.wait_for_selector(".assistant:has-text('part 1.')")
    page.click("#abort")
    page.wait_for_selector(".assistant:has-text('(stopped)')")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTEFACTS / "web-chat.png"), full_page=True)

    # the session list: a new session, then back to the first, whose history is shown again
    assert page.locator("#sessions li").count() >= 1
    first = page.locator("#sessions li.current").get_attribute("data-id")
    page.click("#new")
    page.fill("#input", "second session")
    page.press("#input", "Enter")
    page.wait_for_selector(".assistant:has-text('echo: second session (1 user messages)')")
    page.click(f"#sessions li[data-id='{first}']")
    page.wait_for_selector(".user:has-text('jot buy milk')")
    assert page.locator("details.tool").count() >= 1
    assert errors == []
