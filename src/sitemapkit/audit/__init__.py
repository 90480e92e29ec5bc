"""The audit: a site's sitemaps against the live site.

`sitemapkit.audit(...)` (and `sitemapkit.aaudit`, its async form) is `sitemapkit.audit.run.audit`; it returns
an `AuditReport`. The top-level package keeps the function under that name although this package shares it
(see `sitemapkit.__init__`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitemapkit.core.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from sitemapkit.audit.report import AuditReport
    from sitemapkit.audit.run import AuditProgress, aaudit, audit

_LAZY = {
    "audit": "sitemapkit.audit.run",
    "aaudit": "sitemapkit.audit.run",
    "AuditProgress": "sitemapkit.audit.run",
    "AuditReport": "sitemapkit.audit.report",
}


__getattr__ = _lazy_exports(__name__, _LAZY)


__all__ = ["AuditProgress", "AuditReport", "aaudit", "audit"]
