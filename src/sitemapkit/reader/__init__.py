"""Reading sitemaps: fetch -> safety -> sniff -> parser -> walk over a tree -> export."""
