"""One exception hierarchy: catch `SitemapkitError` for anything this library raises on purpose."""

from __future__ import annotations


class SitemapkitError(Exception):
    """Base class of every error sitemapkit raises on purpose."""


class UsageError(SitemapkitError, ValueError):
    """The caller asked for something impossible (bad option, bad argument). Every public function raises
    it for a bad argument; it is also a `ValueError`, as such errors are in Python."""


class InputError(SitemapkitError):
    """Input could not be read; the message names the file or URL and what is wrong."""


class InvalidUrlError(SitemapkitError, ValueError):
    """A URL could not be made into a valid absolute http(s) URI."""

    def __init__(self, url: str, reason: str, code: str = "invalid-url") -> None:
        super().__init__(f"{reason}: {url!r}")
        self.url = url
        self.reason = reason
        self.code = code


class InvalidDateError(SitemapkitError, ValueError):
    """A value is not a W3C Datetime."""


class PublishError(SitemapkitError):
    """Output could not be published; nothing was changed in the output folder."""


class StrictModeError(PublishError):
    """`strict` was set and a problem was found, so nothing was published."""


class InterruptedAfterPublish(KeyboardInterrupt):
    """Ctrl-C came while a finished set was being renamed into place: the renames were completed first
    (a half-published set would be worse), so the new set is published; the interrupt is raised after."""


class Terminated(SystemExit):
    """SIGTERM (a CI timeout, `kill`, a container stop), raised where Ctrl-C raises `KeyboardInterrupt`:
    the run unwinds the same way (temporary files removed, nothing half-written published); the exit status
    is 143 (128 + SIGTERM)."""


_published = [0]


def note_published() -> None:
    """Count a publication in this process (a sitemap set renamed into place, a robots.txt replaced), so
    that an interrupt coming after it is not reported as "nothing was published"."""
    _published[0] += 1


def published_count() -> int:
    """How many publications `note_published` has counted in this process."""
    return _published[0]
