"""The generator's pipeline between sources and writer: normalise URLs, keep them in scope, drop duplicates,
and make dates timezone-aware. Every rejection is a diagnostic naming the source and line."""

from __future__ import annotations

import dataclasses

from xxhash import xxh3_64_intdigest

from sitemapkit.dates import is_naive, to_aware
from sitemapkit.diagnostics import Diagnostic, DiagnosticLog
from sitemapkit.errors import InvalidUrlError
from sitemapkit.model import Alternate, Image, UrlEntry, Video
from sitemapkit.urls import Scope, normalize_url


class Deduper:
    """Remembers URLs seen, at a fixed cost per URL: a 64-bit XXH3 hash held as an int in a set
    (about 70 bytes of memory per unique URL in CPython, measured in the README). The hash is
    deterministic, so the same input always gives the same output; two different URLs collide with
    probability about n²/2⁶⁵ (3·10⁻⁸ for a million URLs)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: set[int] = set()

    def add(self, url: str) -> bool:
        """Record `url` (a normalised URL); False if it was already seen.

        The key is the hash of the URL as written in XML (`&` and `'` escaped), so that the generator's
        bulk path, which works on escaped text, shares this set."""
        if "&" in url or "'" in url:
            url = url.replace("&", "&amp;").replace("'", "&apos;")
        key = xxh3_64_intdigest(url.encode())
        seen = self._seen
        if key in seen:
            return False
        seen.add(key)
        return True

    def __len__(self) -> int:
        return len(self._seen)


class Pipeline:
    """Turns entries from any source into entries the writer may publish, or rejects them.

    - `loc` is normalised (`normalize_url`, with `/paths` resolved against the scope's folder);
    - URLs out of `scope` are rejected (`url-not-allowed`);
    - exact duplicates after normalisation are dropped (`duplicate-url`, a warning);
    - naive date-times are taken as UTC, and the run says so once (`naive-datetime`).
    """

    def __init__(self, scope: Scope, log: DiagnosticLog, *, dedupe: bool = True) -> None:
        self.scope = scope
        self.log = log
        self.deduper: Deduper | None = Deduper() if dedupe else None
        self.accepted = 0
        self.rejected = 0
        self.duplicates = 0

    def process(self, entry: UrlEntry) -> UrlEntry | None:
        """The entry ready to write, or None (with a diagnostic) when it must be left out."""
        source, line = entry.sitemap, entry.line
        try:
            loc = normalize_url(entry.loc, self.scope.folder)
        except InvalidUrlError as exc:
            self.rejected += 1
            self.log.add(
                Diagnostic.make(
                    exc.code, f"{exc.reason}; the URL is left out", source=source, line=line, url=entry.loc
                )
            )
            return None
        if loc not in self.scope:
            self.rejected += 1
            self.log.add(
                Diagnostic.make(
                    "url-not-allowed",
                    f"{self.scope.explain(loc)}; the URL is left out (use --allow-host for cross-submission)",
                    source=source,
                    line=line,
                    url=loc,
                )
            )
            return None
        if not self.admit(loc, source, line):
            return None
        if entry.images or entry.videos or entry.alternates:
            entry = self._extension_urls(entry, source, line, loc)
            stripped = self._without_deprecated(entry, source, line, loc)
            if stripped is not None:
                entry = stripped
        changes: dict[str, object] = {}
        if loc != entry.loc:
            changes["loc"] = loc
        if entry.lastmod is not None and is_naive(entry.lastmod):
            changes["lastmod"] = to_aware(entry.lastmod)
            self.log.once(
                "naive-datetime",
                Diagnostic.make(
                    "naive-datetime",
                    f"lastmod {entry.lastmod.isoformat()} has no timezone; it and any other such times "
                    "are taken as UTC",
                    source=source,
                    line=line,
                    url=loc,
                ),
            )
        return dataclasses.replace(entry, **changes) if changes else entry  # type: ignore[arg-type]

    def _url_or_none(
        self, url: str, what: str, source: str | None, line: int | None, page: str
    ) -> str | None:
        try:
            return normalize_url(url, self.scope.folder)
        except InvalidUrlError as exc:
            self.log.add(
                Diagnostic.make(
                    exc.code, f"{what}: {exc.reason}; it is left out", source=source, line=line, url=page
                )
            )
            return None

    def _extension_urls(self, entry: UrlEntry, source: str | None, line: int | None, loc: str) -> UrlEntry:
        """The entry with every image, video and alternate URL normalised; one with an invalid URL is left out
        (with a diagnostic). Images and alternates may live on other hosts, so no scope applies to them."""
        images: list[Image] = []
        for image in entry.images:
            url = self._url_or_none(image.loc, "<image:loc>", source, line, loc)
            if url is not None:
                images.append(image if url == image.loc else dataclasses.replace(image, loc=url))
        videos: list[Video] = []
        for video in entry.videos:
            changes: dict[str, str | None] = {}
            ok = True
            for name in ("thumbnail_loc", "content_loc", "player_loc", "uploader_info", "gallery_loc"):
                value = getattr(video, name)
                if value is None:
                    continue
                url = self._url_or_none(value, f"<video:{name}> of a video", source, line, loc)
                if url is None:
                    ok = False
                    break
                if url != value:
                    changes[name] = url
            if ok:
                videos.append(dataclasses.replace(video, **changes) if changes else video)  # type: ignore[arg-type]
        alternates: list[Alternate] = []
        for alt in entry.alternates:
            url = self._url_or_none(alt.href, f"<xhtml:link hreflang={alt.hreflang!r}>", source, line, loc)
            if url is not None:
                alternates.append(alt if url == alt.href else Alternate(alt.hreflang, url))
        return dataclasses.replace(
            entry, images=tuple(images), videos=tuple(videos), alternates=tuple(alternates)
        )

    def _without_deprecated(
        self, entry: UrlEntry, source: str | None, line: int | None, loc: str
    ) -> UrlEntry | None:
        """The entry without the image and video tags Google deprecated in 2022 (each kind reported once),
        or None when it has none: a sitemap that uses them draws a warning from every validator."""
        dropped: list[str] = []
        images = entry.images
        if any(i.caption or i.title or i.geo_location or i.license for i in images):
            for tag, present in (
                ("image:caption", any(i.caption for i in images)),
                ("image:title", any(i.title for i in images)),
                ("image:geo_location", any(i.geo_location for i in images)),
                ("image:license", any(i.license for i in images)),
            ):
                if present:
                    dropped.append(tag)
            images = tuple(Image(i.loc) for i in images)
        videos = entry.videos
        if any(v.category or v.gallery_loc for v in videos):
            dropped += [
                t
                for t, p in (
                    ("video:category", any(v.category for v in videos)),
                    ("video:gallery_loc", any(v.gallery_loc for v in videos)),
                )
                if p
            ]
            videos = tuple(dataclasses.replace(v, category=None, gallery_loc=None) for v in videos)
        if not dropped:
            return None
        for tag in dropped:
            self.log.once(
                f"deprecated:{tag}",
                Diagnostic.make(
                    "deprecated-tag",
                    f"<{tag}> is deprecated by Google (2022) and is not written (reported once per run)",
                    source=source,
                    line=line,
                    url=loc,
                ),
            )
        return dataclasses.replace(entry, images=images, videos=videos)

    def admit(self, loc: str, source: str | None, line: int | None) -> bool:
        """Count a normalised, in-scope URL as accepted unless it is a duplicate (then say so)."""
        if self.deduper is not None and not self.deduper.add(loc):
            self.duplicates += 1
            self.log.add(
                Diagnostic.make(
                    "duplicate-url", "listed before; written once", source=source, line=line, url=loc
                )
            )
            return False
        self.accepted += 1
        return True
