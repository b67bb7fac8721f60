"""Scoring roll-ups and leaderboards for the four benchmarks (pure functions + `leaderboard` command)."""
