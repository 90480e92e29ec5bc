"""`--render`: run each page's JavaScript in headless Chromium before reading it, for single-page apps.

Playwright (the `render` extra: `pip install 'sitemapkit[render]'`) drives the system's Chromium (found on
the PATH as `chromium`, `chromium-browser` or `google-chrome`, or named by `SITEMAPKIT_CHROMIUM`); no
browser is downloaded. The page itself is not fetched twice: the browser is handed the body the crawler
already fetched (with its robots.txt check, pacing and retries), and only the page's scripts and data
requests go out from the browser; images, media, fonts and stylesheets are not loaded.

The browser is contained: a page is content from the web, and its scripts may try to reach what the crawler
must not (`location.href = 'http://10.0.0.5/admin'`, a `fetch` to a loopback port, an `<iframe>`).

- Every request the page makes passes the crawl's fetch policy (`FetchPolicy`: its host is resolved here and
  each address judged by `connect_problem`, so a loopback or private address is refused unless it is the
  start URL's origin or `allow_private`) and robots.txt (the crawler's `allowed(url)`), else it is aborted.
- A navigation of the page itself (a script's `location`, a meta refresh, a form) is answered with a 204
  from here (nothing goes out, the page stays) whatever its target: only the page's own document is read.
  One refused by the policy or to another site (`cross_host_reason`) is reported; one within the site
  gives its target as a link to crawl. (Chromium resolves a host again itself: a name that answers a
  public address here and a private one to the browser could still get through.)
- If the main frame's URL changed anyway, rendering fails (`RenderError`): another document's DOM is never
  read as the page's.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from sitemapkit.core.errors import UsageError
from sitemapkit.reader.fetch import FetchPolicy
from sitemapkit.reader.transport import resolve

SKIPPED_RESOURCES = frozenset({"image", "media", "font", "stylesheet"})


class RenderError(Exception):
    """A page the browser could not render (a timeout, a crash, its main frame left it); the message says
    why."""


@dataclass(slots=True)
class Rendered:
    """A rendered page: its DOM as HTML, what the containment refused, and the in-site navigations the page
    attempted (aborted, to be crawled as links)."""

    html: bytes
    blocked: list[tuple[str, str]] = field(default_factory=list)
    """(URL, why) of each request refused."""
    navigations: list[str] = field(default_factory=list)


def _always(url: str) -> bool:
    return True


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

    def __init__(
        self,
        concurrency: int,
        timeout: float,
        user_agent: str,
        *,
        policy: FetchPolicy | None = None,
        allowed: Callable[[str], bool] = _always,
    ) -> None:
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
        self.policy = policy or FetchPolicy()
        self.allowed = allowed
        self._verdicts: dict[tuple[str, int], str | None] = {}
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

    async def _address_problem(self, url: str) -> str | None:
        """Why the fetch policy refuses `url`'s host (any of its addresses), or None."""
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".").lower()
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return f"{url}: not a usable URL"
        key = (host, port)
        if key in self._verdicts:
            return self._verdicts[key]
        try:
            addresses = await resolve(host, port, None)  # as the fetcher's transport resolves
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            problem: str | None = str(exc)
        else:
            problem = None
            for _, sockaddr in addresses:  # every address: Chromium may connect to any of them
                problem = self.policy.connect_problem(host, port, str(sockaddr[0]))
                if problem is not None:
                    break
        if len(self._verdicts) < 10_000:
            self._verdicts[key] = problem
        return problem

    async def render(self, url: str, body: bytes, content_type: str) -> Rendered:
        """The page's HTML after its scripts ran, given the body fetched for `url`; raises `RenderError`."""
        done = Rendered(b"")
        async with self._slots:
            page = await self._context.new_page()
            served = {"document": False}
            try:

                async def route(r: Any) -> None:
                    request = r.request
                    target = request.url.split("#", 1)[0]
                    main = request.frame == page.main_frame
                    if request.is_navigation_request() and main:
                        if not served["document"] and target == url:
                            served["document"] = True
                            await r.fulfill(status=200, headers={"content-type": content_type}, body=body)
                            return
                        # only the page's own document is read: a 204 (no content) answers the navigation
                        # without a request going out, and the browser stays on the page (an aborted one
                        # would show its error page instead)
                        await r.fulfill(status=204, body=b"")
                        web = target.startswith(("http://", "https://"))
                        why = await self._address_problem(target) if web else "not an http(s) URL"
                        if why is None:
                            why = self.policy.cross_host_reason(url, target, "the page navigates to")
                        if why is None:
                            done.navigations.append(target)
                        else:
                            done.blocked.append((target, why))
                        return
                    if request.resource_type in SKIPPED_RESOURCES:
                        await r.abort()
                        return
                    if not target.startswith(("http://", "https://")):
                        await r.abort()
                        done.blocked.append((target[:200], "not an http(s) URL"))
                        return
                    why = await self._address_problem(target)
                    if why is None and request.is_navigation_request():  # a frame's document
                        why = self.policy.cross_host_reason(url, target, "a frame of the page loads")
                    if why is None and not self.allowed(target):
                        why = "robots.txt disallows it"
                    if why is not None:
                        await r.abort()
                        done.blocked.append((target, why))
                        return
                    await r.continue_()

                await page.route("**/*", route)
                await page.goto(url, wait_until="networkidle", timeout=self.timeout_ms)
                current = page.main_frame.url.split("#", 1)[0]
                if current != url:
                    raise RenderError(f"rendering failed: the page's main frame went to {current}; not read")
                html: str = await page.content()
                done.html = b"\xef\xbb\xbf" + html.encode(
                    "utf-8", "surrogatepass"
                )  # a BOM: the DOM is text now
                return done
            except self._error as exc:
                raise RenderError(f"rendering failed: {str(exc).strip().splitlines()[0]}") from None
            finally:
                await page.close()
