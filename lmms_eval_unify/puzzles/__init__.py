"""Puzzles shared by benchmarks (maze, sliding puzzle, 2x2 jigsaw): generators, renderers, parsers, scoring,
task inputs and baseline answer spaces."""

from lmms_eval_unify.puzzles.domain import PuzzleDomain
from lmms_eval_unify.puzzles.maze import MazeDomain
from lmms_eval_unify.puzzles.sliding import SlidingDomain

DOMAINS: dict[str, PuzzleDomain] = {"maze": MazeDomain(), "sliding": SlidingDomain()}

__all__ = ["DOMAINS", "MazeDomain", "PuzzleDomain", "SlidingDomain"]
