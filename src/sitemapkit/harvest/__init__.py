"""Harvest: read the sitemaps of many sites into a Parquet dataset, on one machine or a Ray cluster."""

from sitemapkit.harvest.options import HarvestOptions
from sitemapkit.harvest.run import HarvestProgress, aharvest, harvest

__all__ = ["HarvestOptions", "HarvestProgress", "aharvest", "harvest"]
