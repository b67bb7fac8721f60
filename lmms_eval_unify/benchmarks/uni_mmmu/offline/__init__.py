"""Offline tools of uni_mmmu: the fixture-data generator and the published-release converter (not used when
scoring)."""
