"""MME-Unify (arXiv 2504.03641): data, prompts, answer spaces and scorers."""
