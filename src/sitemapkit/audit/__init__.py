"""The audit: a site's sitemaps against the live site (`sitemapkit.audit.run.audit`)."""
