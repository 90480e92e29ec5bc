"""IndexNow's POSTs go through the one politeness layer and the fetcher's one retry loop: a `Retry-After` is a
hold of the endpoint's origin, batches are paced like any request, the run's wait budget bounds the retries,
and no robots.txt is asked of the endpoint (an address the user named, and a POST is no crawl)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from sitemapkit.publisher.indexnow import IndexNowError, submit
from sitemapkit.reader.fetch import FetchOptions
from sitemapkit.reader.polite import Politeness
from tests.support.helpers import Sleeps
from tests.support.localserver import Answer, LocalServer, sequence

KEY = "3f1c2a9be0d84b7c9a5e6d1f2b3c4a5d"
ACCEPTED: Answer = (202, {}, b"")
SLOW_DOWN: Answer = (429, {"Retry-After": "1"}, b"slow down")


@pytest.fixture
def endpoint_server() -> Iterator[LocalServer]:
    """The endpoint's own host, apart from the site's: its robots.txt disallows everything."""
    server = LocalServer().start()
    server.route("/robots.txt", "User-agent: *\nDisallow: /\nCrawl-delay: 9\n", content_type="text/plain")
    try:
        yield server
    finally:
        server.stop()


def clocked(sleeps: Sleeps, **kw: Any) -> FetchOptions:
    """Options whose every wait is recorded in `sleeps` (with the monotonic clock it moves)."""
    base: dict[str, Any] = {"sleep": sleeps, "monotonic": sleeps.monotonic, "jitter": lambda: 0.0}
    return FetchOptions(**(base | kw))


def urls(site: LocalServer, n: int) -> list[str]:
    return [site.url(f"/p{i}") for i in range(n)]


def posts_at(server: LocalServer) -> list[float]:
    """When each POST arrived, from the server's own request log."""
    return [r.at for r in server.requests if r.method == "POST"]


class RealSleeps(Sleeps):
    """Waits for real, and records each wait in a clock of its own that only waits move (so the delays
    recorded are those asked for, however slow the machine)."""

    async def __call__(self, seconds: float) -> None:
        await super().__call__(seconds)
        await asyncio.sleep(seconds)


def test_a_retry_after_is_waited_out_by_the_run_politeness_layer(
    server: LocalServer, endpoint_server: LocalServer
) -> None:
    # 429 with Retry-After: 1, then 202. The wait is the layer's hold of the endpoint's origin (the layer's
    # sleep, shared by every request of the run), and the server's log shows it.
    sleeps = RealSleeps()
    endpoint = endpoint_server.handle("/indexnow", sequence(SLOW_DOWN, ACCEPTED))
    polite = Politeness(clock=sleeps.monotonic, sleep=sleeps)
    result = submit(
        urls(server, 2),
        host=server.base,
        key=KEY,
        endpoint=endpoint,
        verify=False,
        options=FetchOptions(politeness=polite),
    )
    assert sleeps.delays == [1.0]
    first, second = posts_at(endpoint_server)
    assert second - first >= 0.9  # slack for a loaded machine; no upper bound
    assert [(b.status, b.attempts) for b in result.batches] == [(202, 2)]
    assert [r.path for r in endpoint_server.requests] == ["/indexnow", "/indexnow"]  # no robots.txt


def test_batches_and_retries_are_paced_by_the_rate_and_the_endpoint_robots_txt_is_not_asked(
    server: LocalServer, endpoint_server: LocalServer
) -> None:
    # rate 0.5: two requests to one origin start at least 2 s apart, the retry of a 429 (Retry-After: 1)
    # included. The endpoint's robots.txt disallows everything: it is not asked, so nothing is refused.
    sleeps = Sleeps()
    polite = Politeness(rate=0.5, clock=sleeps.monotonic, sleep=sleeps)
    endpoint = endpoint_server.handle("/indexnow", sequence(SLOW_DOWN, ACCEPTED))
    result = submit(
        urls(server, 6),
        host=server.base,
        key=KEY,
        endpoint=endpoint,
        batch_size=2,
        verify=False,
        options=clocked(sleeps, politeness=polite),
    )
    assert sleeps.delays == [2.0, 2.0, 2.0]  # the retry (not 1 s: paced), then each further batch
    assert [(b.status, b.attempts) for b in result.batches] == [(202, 2), (202, 1), (202, 1)]
    assert [(r.method, r.path) for r in endpoint_server.requests] == [("POST", "/indexnow")] * 4
    assert polite.robots_fetched == 0


def test_the_run_wait_budget_bounds_the_retries(server: LocalServer, endpoint_server: LocalServer) -> None:
    # Two 429s asking for 1 s each, a budget of 1.5 s: the second wait is not taken, the answer is final.
    sleeps = Sleeps()
    endpoint = endpoint_server.handle("/indexnow", sequence(SLOW_DOWN, SLOW_DOWN, ACCEPTED))
    with pytest.raises(IndexNowError, match="still answered 429 Too Many Requests after 2 attempts") as info:
        submit(
            urls(server, 1),
            host=server.base,
            key=KEY,
            endpoint=endpoint,
            verify=False,
            options=clocked(sleeps, retries=5, retry_budget=1.5),
        )
    assert "a further wait would pass the 1.5 s of waits a run may spend" in str(info.value)
    assert "(the endpoint said: slow down)" in str(info.value)
    assert sleeps.delays == [1.0] and len(posts_at(endpoint_server)) == 2 and info.value.status == 429


def test_an_endpoint_whose_host_does_not_exist_is_not_asked_again(server: LocalServer) -> None:
    # DNS says the name does not exist: no retry changes that (as for every other request).
    sleeps = Sleeps()
    with pytest.raises(IndexNowError, match=r"no-such-host\.invalid/indexnow could not be reached") as info:
        submit(
            urls(server, 1),
            host=server.base,
            key=KEY,
            endpoint="http://no-such-host.invalid/indexnow",
            verify=False,
            options=clocked(sleeps, retries=3),
        )
    assert sleeps.delays == [] and info.value.status is None


def test_a_5xx_no_retry_mends_is_not_retried(server: LocalServer, endpoint_server: LocalServer) -> None:
    # The package's one list of answers worth asking again (`RETRY_STATUSES`): 501 Not Implemented is not one.
    sleeps = Sleeps()
    endpoint = endpoint_server.handle("/indexnow", sequence((501, {}, b"no POST here"), ACCEPTED))
    with pytest.raises(IndexNowError, match="answered HTTP 501, a server error that a retry would not mend"):
        submit(
            urls(server, 1),
            host=server.base,
            key=KEY,
            endpoint=endpoint,
            verify=False,
            options=clocked(sleeps, retries=3),
        )
    assert sleeps.delays == [] and len(posts_at(endpoint_server)) == 1
