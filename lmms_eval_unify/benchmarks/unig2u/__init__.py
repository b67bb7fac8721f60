"""UniG2U-Bench (arXiv 2603.03241): subtask table, prompts, scorers, answer spaces and offline data."""
