"""Offline tools of unig2u: the fixture-data generator and the published-release converter (not used when
scoring)."""
