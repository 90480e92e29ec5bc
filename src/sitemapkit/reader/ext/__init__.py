"""One handler per sitemap extension namespace (image, video, news, xhtml): each reads the elements of its
namespace in a `<url>` into its part of the entry, with its own checks and state (see extensions.py)."""
