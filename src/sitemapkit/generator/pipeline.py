"""The generator's pipeline between sources and writer: normalise URLs, keep them in scope, drop duplicates,
and make dates timezone-aware. Every rejection is a diagnostic naming the source and line."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable
from operator import ne

from xxhash import xxh3_64_intdigest

from sitemapkit.core.constants import (
    MAX_IMAGES_PER_URL,
    MAX_VIDEO_DESCRIPTION,
    MAX_VIDEO_DURATION,
    MAX_VIDEO_TAGS,
)
from sitemapkit.core.dates import FutureLimit, format_w3c, is_naive, sort_key, to_aware
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticLog, Severity
from sitemapkit.core.errors import InvalidUrlError
from sitemapkit.core.languages import hreflang_problem
from sitemapkit.core.model import Alternate, Image, News, UrlEntry, Video, new_image, new_url_entry
from sitemapkit.core.urls import Scope, normalize_url
from sitemapkit.generator.rules import UrlRules
from sitemapkit.generator.sources.records import with_extensions

NEWS_MAX_AGE = dt.timedelta(days=2)
_NEWS_LANGUAGE = re.compile(r"[a-z]{2,3}|zh-cn|zh-tw", re.IGNORECASE)


_NO_DETAILS = (None, None, None, None)  # an image's caption, title, geo_location and license, all absent


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

    def claim(self, keys: set[int]) -> bool:
        """Record a batch of keys (`xxh3_64_intdigest` of URLs as written in XML, distinct), all or none:
        False, recording nothing, if any was seen already. The generator's bulk lanes use it, and leave the
        batch's duplicates to the per-line path, which reports them."""
        seen = self._seen
        if not seen.isdisjoint(keys):
            return False
        seen |= keys
        return True

    def claim_prefix(self, keys: list[int]) -> int:
        """Record keys from the first on, up to the first one seen already (before, or earlier in `keys`);
        how many were recorded. Every step is a pass in C: no loop in Python over the keys."""
        seen = self._seen
        if seen.isdisjoint(keys):
            before = len(seen)
            seen.update(keys)
            if len(seen) - before == len(keys):
                return len(keys)  # the common case: all new and distinct
            seen.difference_update(keys)  # none was in `seen` before: as it was
            prefix = keys
        else:
            hits = list(map(seen.__contains__, keys))
            prefix = keys[: hits.index(True)]
        # the first key that repeats an earlier one: where the distinct keys, in order, part from `prefix`
        distinct = list(dict.fromkeys(prefix))
        if len(distinct) < len(prefix):
            differs = list(map(ne, distinct, prefix))
            prefix = prefix[: differs.index(True) if True in differs else len(distinct)]
        seen.update(prefix)
        return len(prefix)

    def __len__(self) -> int:
        return len(self._seen)

    def __contains__(self, url: str) -> bool:
        if "&" in url or "'" in url:
            url = url.replace("&", "&amp;").replace("'", "&apos;")
        return xxh3_64_intdigest(url.encode()) in self._seen


def _allow_host_hint(why: str) -> str:
    """The cross-submission hint, for a URL on another host only (not for one outside the folder, on
    another scheme or port, which no host allowance admits)."""
    if not why.startswith("host "):
        return ""
    return " (another host is allowed for cross-submission with --allow-host, or allow_hosts= in Python)"


class Pipeline:
    """Turns entries from any source into entries the writer may publish, or rejects them.

    - `loc` is normalised (`normalize_url`, with `/paths` resolved against the scope's folder);
    - URLs out of `scope` are rejected (`url-not-allowed`);
    - the build's `own` files and the URLs the `rules` filter out are dropped (counted in `filtered`, no
      diagnostic), and the rules'
      per-pattern defaults fill in a missing changefreq or priority;
    - exact duplicates after normalisation are dropped (`duplicate-url`, a warning);
    - naive date-times are taken as UTC, and the run says so once (`naive-datetime`);
    - a lastmod in the future is left out (`future-date`, a warning).
    """

    def __init__(
        self,
        scope: Scope,
        log: DiagnosticLog,
        *,
        dedupe: bool = True,
        now: dt.datetime | None = None,
        rules: UrlRules | None = None,
        own: Callable[[str], bool] | None = None,
    ) -> None:
        self.scope = scope
        self._folder = scope.folder
        self.own = own
        self.merge: Callable[[UrlEntry], bool] | None = None
        """Offered each duplicate (processed): True when it was merged into an entry held back."""
        self.merged = 0
        self.rules = rules if rules else None
        self.filtered = 0
        self.log = log
        self.now = now or dt.datetime.now(dt.UTC)
        self.is_future = FutureLimit(self.now)
        self.deduper: Deduper | None = Deduper() if dedupe else None
        self.accepted = 0
        self.rejected = 0
        self.duplicates = 0

    def process(self, entry: UrlEntry) -> UrlEntry | None:
        """The entry ready to write, or None (with a diagnostic) when it must be left out."""
        source, line = entry.sitemap, entry.line
        try:
            loc = normalize_url(entry.loc, self._folder)
        except InvalidUrlError as exc:
            self.rejected += 1
            self.log.add(
                Diagnostic.make(
                    exc.code, f"{exc.reason}; the URL is left out", source=source, line=line, url=entry.loc
                )
            )
            return None
        if "#" in loc:  # not part of the page's URL: /x#a, /x#b and /x are one page
            loc = loc.partition("#")[0]
            self.log.once(
                f"fragment:{source}",
                Diagnostic.make(
                    "invalid-url",
                    f"{entry.loc} has a fragment, which is not part of a page's URL; it is left out (and "
                    "so are those of any other URL of this input)",
                    source=source,
                    line=line,
                    url=entry.loc,
                    severity=Severity.WARNING,
                ),
            )
        if not loc.startswith(self._folder) and loc not in self.scope:
            why = self.scope.explain(loc)
            self.rejected += 1
            self.log.add(
                Diagnostic.make(
                    "url-not-allowed",
                    f"{why}; the URL is left out{_allow_host_hint(why)}",
                    source=source,
                    line=line,
                    url=loc,
                )
            )
            return None
        if self.own is not None and self.own(loc):
            self.filtered += 1  # one of the build's own files (its sitemaps, robots.txt): never listed
            return None
        rules = self.rules
        if rules is not None:
            if not rules.allows(loc):
                self.filtered += 1
                return None
            entry = rules.apply(entry)
        merge = self.merge
        if merge is not None and self.deduper is not None and loc in self.deduper:
            merged = self._complete(entry, loc, source, line)
            if merge(merged):  # the same URL from another source: one entry keeps what each says
                self.merged += 1
                return None
        deduper = self.deduper
        if deduper is not None and not deduper.add(loc):
            self._duplicate(loc, source, line)
            return None
        self.accepted += 1
        return self._complete(entry, loc, source, line)

    def _complete(self, entry: UrlEntry, loc: str, source: str | None, line: int | None) -> UrlEntry:
        """The admitted entry with its extension data checked, `loc` normalised, lastmod made aware."""
        if entry.images or entry.videos or entry.alternates or entry.news is not None:
            return self._complete_slow(entry, loc, source, line)
        lastmod = entry.lastmod
        if lastmod is not None and not self.is_future.settled(lastmod):  # (not a date, or an aware time)
            return self._complete_slow(entry, loc, source, line)
        if loc == entry.loc:
            return entry
        return new_url_entry(loc, lastmod, entry.changefreq, entry.priority, entry.sitemap, entry.line)

    def _complete_slow(self, entry: UrlEntry, loc: str, source: str | None, line: int | None) -> UrlEntry:
        if entry.images or entry.videos or entry.alternates:
            entry = self._extension_urls(entry, source, line, loc)
            stripped = self._without_deprecated(entry, source, line, loc)
            if stripped is not None:
                entry = stripped
            entry = self._valid_extensions(entry, source, line, loc)
        if entry.news is not None and self._news_too_old(entry.news, source, line, loc):
            entry = dataclasses.replace(entry, news=None)
        original = lastmod = entry.lastmod
        if original is not None and not self.is_future.settled(original):
            if is_naive(original):
                lastmod = to_aware(original)
                self.log.once(
                    "naive-datetime",
                    Diagnostic.make(
                        "naive-datetime",
                        f"lastmod {original.isoformat()} has no timezone; it and any other such times "
                        "are taken as UTC",
                        source=source,
                        line=line,
                        url=loc,
                    ),
                )
            if self.is_future(original):
                lastmod = None
                self.log.add(
                    Diagnostic.make(
                        "future-date",
                        f"lastmod {format_w3c(original)} lies in the future; it is left out (search engines "
                        "distrust such dates)",
                        source=source,
                        line=line,
                        url=loc,
                    )
                )
        if loc == entry.loc and lastmod is entry.lastmod:
            return entry
        return new_url_entry(  # (several times cheaper than dataclasses.replace)
            loc,
            lastmod,
            entry.changefreq,
            entry.priority,
            entry.sitemap,
            entry.line,
            entry.images,
            videos=entry.videos,
            news=entry.news,
            alternates=entry.alternates,
        )

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
        changed = False
        for image in entry.images:
            url = self._url_or_none(image.loc, "<image:loc>", source, line, loc)
            if url is None:
                changed = True
            elif url == image.loc:
                images.append(image)
            else:
                changed = True
                if (image.caption, image.title, image.geo_location, image.license) == _NO_DETAILS:
                    images.append(new_image(url))  # (the usual image, its loc alone: made without __init__)
                else:
                    images.append(Image(url, image.caption, image.title, image.geo_location, image.license))
        if not (entry.videos or entry.alternates):  # images only (the usual extension)
            return with_extensions(entry, {"images": tuple(images)}) if changed else entry
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
                changed = changed or bool(changes)
                videos.append(dataclasses.replace(video, **changes) if changes else video)  # type: ignore[arg-type]
            else:
                changed = True
        alternates: list[Alternate] = []
        for alt in entry.alternates:
            url = self._url_or_none(alt.href, f"<xhtml:link hreflang={alt.hreflang!r}>", source, line, loc)
            if url is None:
                changed = True
            elif url == alt.href:
                alternates.append(alt)
            else:
                changed = True
                alternates.append(Alternate(alt.hreflang, url))
        if not changed:
            return entry  # already normalised (a folder scan's pages are): no copy
        found = {"images": tuple(images), "videos": tuple(videos), "alternates": tuple(alternates)}
        return with_extensions(entry, found)

    def _report(self, code: str, message: str, source: str | None, line: int | None, loc: str) -> None:
        self.log.add(Diagnostic.make(code, message, source=source, line=line, url=loc))

    def _valid_extensions(self, entry: UrlEntry, source: str | None, line: int | None, loc: str) -> UrlEntry:
        """The entry without the extension data a validator would reject: each part left out is reported,
        so that what the writer publishes validates with zero diagnostics."""
        images = entry.images
        if (
            not (entry.videos or entry.alternates)
            and entry.news is None
            and len(images) <= MAX_IMAGES_PER_URL
        ):
            return entry  # (images only, and not too many: nothing to check)
        if len(images) > MAX_IMAGES_PER_URL:
            self._report(
                "too-many-images",
                f"{len(images):,} images; only the first {MAX_IMAGES_PER_URL:,} are written",
                source,
                line,
                loc,
            )
            images = images[:MAX_IMAGES_PER_URL]
        videos = tuple(
            v for v in (self._valid_video(v, source, line, loc) for v in entry.videos) if v is not None
        )
        alternates: list[Alternate] = []
        if entry.alternates:
            for alt in entry.alternates:
                problem = hreflang_problem(alt.hreflang)
                if problem is None:
                    alternates.append(alt)
                else:
                    self._report(
                        "hreflang-invalid", f"{problem}; this alternate is left out", source, line, loc
                    )
        news = entry.news
        if news is not None and _NEWS_LANGUAGE.fullmatch(news.publication_language) is None:
            self._report(
                "invalid-value",
                f"news language {news.publication_language!r} is not an ISO 639 code "
                "(like en, or zh-cn / zh-tw); the news block is left out",
                source,
                line,
                loc,
            )
            news = None
        if (images, videos, tuple(alternates), news) == (
            entry.images,
            entry.videos,
            entry.alternates,
            entry.news,
        ):
            return entry
        return dataclasses.replace(
            entry, images=images, videos=videos, alternates=tuple(alternates), news=news
        )

    def _valid_video(self, v: Video, source: str | None, line: int | None, loc: str) -> Video | None:
        missing = [n for n in ("thumbnail_loc", "title", "description") if not getattr(v, n)]
        if not (v.content_loc or v.player_loc):
            missing.append("content_loc or player_loc")
        if missing:
            self._report(
                "video-missing-tag", f"a video lacks {', '.join(missing)}; it is left out", source, line, loc
            )
            return None
        if loc in (v.content_loc, v.player_loc):
            self._report(
                "video-location-is-page",
                "a video's content or player location is the page itself; it is left out",
                source,
                line,
                loc,
            )
            return None
        if len(v.description or "") > MAX_VIDEO_DESCRIPTION:
            self._report(
                "invalid-value",
                f"a video description has {len(v.description or ''):,} characters "
                f"(at most {MAX_VIDEO_DESCRIPTION:,}); the video is left out",
                source,
                line,
                loc,
            )
            return None
        changes: dict[str, object] = {}
        checks: list[tuple[str, bool, str]] = [
            (
                "duration",
                v.duration is not None and not 1 <= v.duration <= MAX_VIDEO_DURATION,
                f"duration {v.duration} is not 1 to {MAX_VIDEO_DURATION:,} seconds",
            ),
            (
                "rating",
                v.rating is not None and not 0.0 <= v.rating <= 5.0,
                f"rating {v.rating} is not 0.0 to 5.0",
            ),
            (
                "view_count",
                v.view_count is not None and v.view_count < 0,
                f"view count {v.view_count} is negative",
            ),
            (
                "uploader",
                v.uploader is not None and len(v.uploader) > 255,
                "uploader has more than 255 characters",
            ),
            (
                "restriction_relationship",
                v.restriction_relationship not in (None, "allow", "deny"),
                f"restriction relationship {v.restriction_relationship!r} is not allow or deny",
            ),
            (
                "platform_relationship",
                v.platform_relationship not in (None, "allow", "deny"),
                f"platform relationship {v.platform_relationship!r} is not allow or deny",
            ),
            (
                "platform",
                v.platform is not None and not set(v.platform.split()) <= {"web", "mobile", "tv"},
                f"platform {v.platform!r} is not a list of web, mobile, tv",
            ),
        ]
        for name, bad, message in checks:
            if bad:
                self._report("invalid-value", f"video {message}; the field is left out", source, line, loc)
                changes[name] = None
        if len(v.tags) > MAX_VIDEO_TAGS:
            self._report(
                "invalid-value",
                f"a video has {len(v.tags)} tags; only the first {MAX_VIDEO_TAGS} are written",
                source,
                line,
                loc,
            )
            changes["tags"] = v.tags[:MAX_VIDEO_TAGS]
        return dataclasses.replace(v, **changes) if changes else v  # type: ignore[arg-type]

    def _news_too_old(self, news: News, source: str | None, line: int | None, loc: str) -> bool:
        """True (with a warning) when the article is more than two days old: Google News takes only the last
        two days, so the writer leaves the news block out and keeps the URL."""
        if self.now - sort_key(news.publication_date) <= NEWS_MAX_AGE:
            return False
        self._report(
            "news-too-old",
            f"the article was published {format_w3c(news.publication_date)}, more "
            "than two days ago; its news block is left out",
            source,
            line,
            loc,
        )
        return True

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
            self._duplicate(loc, source, line)
            return False
        self.accepted += 1
        return True

    def _duplicate(self, loc: str, source: str | None, line: int | None) -> None:
        self.duplicates += 1
        self.log.add(
            Diagnostic.make("duplicate-url", "listed before; written once", source=source, line=line, url=loc)
        )
