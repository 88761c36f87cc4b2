"""Prometheus histograms: scraped from any `/metrics` endpoint (`scrape`) or queried from a server (`prometheus`)."""
