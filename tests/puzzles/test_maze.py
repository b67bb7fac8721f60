import io
import random

import numpy as np
import pytest
from PIL import Image, ImageDraw

from lmms_eval_unify.puzzles.domain import read_state, shortest_paths, simulate
from lmms_eval_unify.puzzles.maze import FLOOR, WALL, MazeDomain, MazeState, carve_perfect_maze, generate_maze

DOMAIN = MazeDomain()


def _floor_graph(walls):
    size = len(walls)
    nodes = {(r, c) for r in range(size) for c in range(size) if not walls[r][c]}
    edges = {
        frozenset({(r, c), (r + dr, c + dc)})
        for r, c in nodes
        for dr, dc in ((0, 1), (1, 0))
        if (r + dr, c + dc) in nodes
    }
    return nodes, edges


@pytest.mark.parametrize("seed", range(5))
def test_carved_maze_is_a_tree(seed):
    nodes, edges = _floor_graph(carve_perfect_maze(6, random.Random(seed)))
    assert len(edges) == len(nodes) - 1  # connected below + this => no loops
    start = next(iter(nodes))
    seen, stack = {start}, [start]
    while stack:
        node = stack.pop()
        for edge in edges:
            if node in edge:
                (other,) = edge - {node}
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
    assert seen == nodes


def test_generated_mazes_have_unique_shortest_path_in_range():
    rng = random.Random(7)
    for _ in range(20):
        state, moves = generate_maze(DOMAIN, rng)
        found = shortest_paths(DOMAIN, state, lambda s, g=state.goal: s.agent == g, max_depth=20)
        assert found.count == 1 and found.moves == moves
        assert 2 <= len(moves) <= 10
        assert simulate(DOMAIN, state, moves)[-1].agent == state.goal


def test_path_count_detects_ambiguity():
    open_room = tuple(tuple(False for _ in range(3)) for _ in range(3))
    state = MazeState(open_room, (0, 0), (1, 1))
    found = shortest_paths(DOMAIN, state, lambda s: s.agent == (1, 1), max_depth=5)
    assert (found.length, found.count) == (2, 2)


def _maze_states(n=6):
    rng = random.Random(3)
    out = []
    for _ in range(n):
        state, moves = generate_maze(DOMAIN, rng)
        out += [state, *simulate(DOMAIN, state, moves)]
    return out


def test_parser_reads_rendered_resized_and_jpeg_images():
    for state in _maze_states():
        image = DOMAIN.render(state)
        assert DOMAIN.parse_grid(image) == DOMAIN.grid_of(state)
        for size in (200, 1024):
            assert read_state(DOMAIN, image.resize((size, size), Image.Resampling.BILINEAR)) == state
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=85)
        assert read_state(DOMAIN, Image.open(buffer)) == state


def test_goal_reached_is_read_as_start_on_goal():
    state = _maze_states(1)[-1]
    assert state.agent == state.goal
    assert "SG" in {token for row in DOMAIN.parse_grid(DOMAIN.render(state)) for token in row}


def test_unclassifiable_cell_is_question_mark():
    image = DOMAIN.render(_maze_states(1)[0])
    draw = ImageDraw.Draw(image)
    cell, margin = DOMAIN.cell_px, DOMAIN.margin_px
    # half wall, half floor: neither reaches the 75 % majority
    draw.rectangle([margin, margin, margin + cell - 1, margin + cell // 2], fill=WALL)
    draw.rectangle([margin, margin + cell // 2 + 1, margin + cell - 1, margin + cell - 1], fill=FLOOR)
    grid = DOMAIN.parse_grid(image)
    assert grid[0][0] == "?"
    assert DOMAIN.state_from_grid(grid) is None


def test_blank_image_has_no_board():
    assert DOMAIN.parse_grid(Image.new("RGB", (300, 300), "white")) is None
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8))
    assert read_state(DOMAIN, noise) is None
