"""`--render`: run each page's JavaScript in headless Chromium before reading it, for single-page apps.

Playwright (the `render` extra: `pip install 'sitemapkit[render]'`) drives the system's Chromium (found on
the PATH as `chromium`, `chromium-browser` or `google-chrome`, or named by `SITEMAPKIT_CHROMIUM`); no
browser is downloaded. The page itself is not fetched twice: the browser is handed the body the crawler
already fetched (with its robots.txt check, pacing and retries), and only the page's scripts and data
requests go out from the browser; images, media, fonts and stylesheets are not loaded.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from typing import Any

from sitemapkit.core.errors import UsageError

SKIPPED_RESOURCES = frozenset({"image", "media", "font", "stylesheet"})


class RenderError(Exception):
    """A page the browser could not render (a timeout, a crash); the message says why."""


def find_chromium() -> str | None:
    """The Chromium to use: `SITEMAPKIT_CHROMIUM`, else the first on the PATH; None when there is none."""
    named = os.environ.get("SITEMAPKIT_CHROMIUM")
    if named:
        return named
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if found := shutil.which(name):
            return found
    return None


class Renderer:
    """Headless Chromium pages, at most `concurrency` at a time. Use as `async with Renderer(...) as r:`."""

    def __init__(self, concurrency: int, timeout: float, user_agent: str) -> None:
        try:
            from playwright.async_api import Error, async_playwright
        except ImportError:
            raise UsageError("--render needs Playwright: pip install 'sitemapkit[render]'") from None
        self.executable = find_chromium()
        if self.executable is None:
            raise UsageError(
                "--render needs Chromium: install it (apt-get install chromium), or name it in "
                "SITEMAPKIT_CHROMIUM"
            )
        self._start = async_playwright
        self._error = Error
        self._slots = asyncio.Semaphore(concurrency)
        self.timeout_ms = timeout * 1000
        self.user_agent = user_agent
        self._playwright: Any = None
        self._browser: Any = None
        self._context: Any = None

    async def __aenter__(self) -> Renderer:
        self._playwright = await self._start().start()
        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.executable, args=["--no-sandbox", "--disable-gpu"]
            )
        except Exception as exc:  # Playwright raises its own Error for a browser that will not start
            await self._playwright.stop()
            raise UsageError(f"--render: Chromium ({self.executable}) did not start: {exc}") from None
        self._context = await self._browser.new_context(user_agent=self.user_agent)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._browser.close()
        await self._playwright.stop()

    async def render(self, url: str, body: bytes, content_type: str) -> bytes:
        """The page's HTML after its scripts ran, given the body fetched for `url`."""
        async with self._slots:
            page = await self._context.new_page()
            try:

                async def route(r: Any) -> None:
                    request = r.request
                    if request.url.split("#", 1)[0] == url and request.resource_type == "document":
                        await r.fulfill(status=200, headers={"content-type": content_type}, body=body)
                    elif request.resource_type in SKIPPED_RESOURCES:
                        await r.abort()
                    else:
                        await r.continue_()

                await page.route("**/*", route)
                await page.goto(url, wait_until="networkidle", timeout=self.timeout_ms)
                html: str = await page.content()
                return b"\xef\xbb\xbf" + html.encode("utf-8", "surrogatepass")  # a BOM: the DOM is text now
            except self._error as exc:
                raise RenderError(f"rendering failed: {str(exc).strip().splitlines()[0]}") from None
            finally:
                await page.close()
