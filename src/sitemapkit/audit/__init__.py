"""The audit: a site's sitemaps against the live site.

`from sitemapkit.audit import audit` (see `sitemapkit.audit.run.audit`); it returns an `AuditReport`. The
package is not re-exported as `sitemapkit.audit(...)`: a function there would be shadowed by this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sitemapkit.audit.report import AuditReport
    from sitemapkit.audit.run import AuditProgress, audit

_LAZY = {
    "audit": "sitemapkit.audit.run",
    "AuditProgress": "sitemapkit.audit.run",
    "AuditReport": "sitemapkit.audit.report",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sitemapkit.audit' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = ["AuditProgress", "AuditReport", "audit"]
