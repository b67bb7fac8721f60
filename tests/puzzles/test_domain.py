import random
import statistics

import pytest

from lmms_eval_unify.puzzles import DOMAINS
from lmms_eval_unify.puzzles.domain import random_walk_expectation
from lmms_eval_unify.puzzles.maze import generate_maze
from lmms_eval_unify.puzzles.scoring import sequence_accuracy
from lmms_eval_unify.puzzles.sliding import generate_sliding

GENERATORS = {"maze": generate_maze, "sliding": generate_sliding}


@pytest.mark.parametrize("name", ["maze", "sliding"])
def test_random_walk_expectation_matches_monte_carlo(name):
    """The analytic expectation against an independent simulation of the same random policy."""
    domain = DOMAINS[name]
    start, truth = GENERATORS[name](domain, random.Random(2))
    expected = random_walk_expectation(domain, start, truth)
    rng = random.Random(0)
    samples = {key: [] for key in expected}
    for _ in range(4000):
        state, moves, states = start, [], []
        for _ in range(rng.randint(*domain.length_range)):
            move = rng.choice(domain.legal_moves(state))
            state = domain.apply(state, move)
            moves.append(move)
            states.append(state)
        truth_states, s = [], start
        for move in truth:
            s = domain.apply(s, move)
            truth_states.append(s)
        samples["text_sample_acc"].append(sequence_accuracy(moves, truth)[0])
        samples["text_step_acc"].append(sequence_accuracy(moves, truth)[1])
        samples["img_sample_acc"].append(sequence_accuracy(states, truth_states)[0])
        samples["img_step_acc"].append(sequence_accuracy(states, truth_states)[1])
    for key, values in samples.items():
        # 0/1 sample metrics are Bernoulli: use their exact standard deviation (the estimate is 0 for rare hits)
        sd = statistics.pstdev(values) if "step" in key else (expected[key] * (1 - expected[key])) ** 0.5
        error = sd / len(values) ** 0.5
        assert abs(statistics.mean(values) - expected[key]) <= 4 * error + 1e-9, key
