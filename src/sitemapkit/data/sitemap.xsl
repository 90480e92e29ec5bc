<?xml version="1.0" encoding="UTF-8"?>
<!-- sitemapkit's stylesheet: shows a sitemap or sitemap index as a readable table in a browser.
     Search engines ignore it; it changes nothing in the sitemap's meaning. -->
<xsl:stylesheet version="1.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
    xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"
    xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"
    xmlns:xhtml="http://www.w3.org/1999/xhtml"
    exclude-result-prefixes="sm image video news xhtml">
  <xsl:output method="html" encoding="UTF-8" indent="yes" doctype-system="about:legacy-compat"/>

  <xsl:template match="/">
    <html lang="en">
      <head>
        <meta charset="utf-8"/>
        <meta name="robots" content="noindex"/>
        <meta name="viewport" content="width=device-width, initial-scale=1"/>
        <title>
          <xsl:choose>
            <xsl:when test="sm:sitemapindex">Sitemap index</xsl:when>
            <xsl:otherwise>Sitemap</xsl:otherwise>
          </xsl:choose>
        </title>
        <style>
          body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem; color: #1d2230; }
          h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
          p.lead { color: #5a6072; margin: 0 0 1.25rem; }
          table { border-collapse: collapse; width: 100%; }
          th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #e3e6ee; vertical-align: top; }
          th { background: #f4f6fa; font-weight: 600; position: sticky; top: 0; }
          tr:hover td { background: #fafbfd; }
          td.num { text-align: right; font-variant-numeric: tabular-nums; color: #5a6072; }
          td.url { word-break: break-all; }
          a { color: #1a56db; text-decoration: none; }
          a:hover { text-decoration: underline; }
        </style>
      </head>
      <body>
        <xsl:apply-templates/>
      </body>
    </html>
  </xsl:template>

  <xsl:template match="sm:sitemapindex">
    <h1>Sitemap index</h1>
    <p class="lead">This index lists <strong><xsl:value-of select="count(sm:sitemap)"/></strong> sitemaps.</p>
    <table>
      <thead><tr><th>#</th><th>Sitemap</th><th>Last modified</th></tr></thead>
      <tbody>
        <xsl:for-each select="sm:sitemap">
          <tr>
            <td class="num"><xsl:value-of select="position()"/></td>
            <td class="url"><a href="{sm:loc}"><xsl:value-of select="sm:loc"/></a></td>
            <td><xsl:value-of select="sm:lastmod"/></td>
          </tr>
        </xsl:for-each>
      </tbody>
    </table>
  </xsl:template>

  <xsl:template match="sm:urlset">
    <h1>Sitemap</h1>
    <p class="lead">This sitemap lists <strong><xsl:value-of select="count(sm:url)"/></strong> URLs.</p>
    <table>
      <thead>
        <tr><th>#</th><th>URL</th><th>Last modified</th><th>Change frequency</th><th>Priority</th>
            <th>Images</th><th>Alternates</th></tr>
      </thead>
      <tbody>
        <xsl:for-each select="sm:url">
          <tr>
            <td class="num"><xsl:value-of select="position()"/></td>
            <td class="url"><a href="{sm:loc}"><xsl:value-of select="sm:loc"/></a></td>
            <td><xsl:value-of select="sm:lastmod"/></td>
            <td><xsl:value-of select="sm:changefreq"/></td>
            <td><xsl:value-of select="sm:priority"/></td>
            <td class="num"><xsl:value-of select="count(image:image)"/></td>
            <td class="num"><xsl:value-of select="count(xhtml:link)"/></td>
          </tr>
        </xsl:for-each>
      </tbody>
    </table>
  </xsl:template>
</xsl:stylesheet>
