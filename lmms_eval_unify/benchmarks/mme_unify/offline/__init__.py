"""Offline tools of mme_unify: the fixture-data generator and the published-release converter (not used when
scoring)."""
