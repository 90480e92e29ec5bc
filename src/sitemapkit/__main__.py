from sitemapkit.cli import main

main()
