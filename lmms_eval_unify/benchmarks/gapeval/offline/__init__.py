"""Offline tools of gapeval: the fixture-data generator and the published-release converter (not used when
scoring)."""
