"""MME-Unify prompts: the paper's system prompts (Figures 20-25, transcribed) and our understanding wording.

The understanding prompt follows the gist of the release's ``Prompt.txt`` (answer with one option letter);
its exact wording and the placement of the choices are ours.
"""

from __future__ import annotations

CSQ = """You are an AI system that answers common-sense knowledge questions by selecting the correct answer \
from multiple choices and then generating an image that visually represents the answer.
Input Data
Question: A factual question requiring knowledge-based reasoning.
Choice: A set of multiple-choice answers labeled A, B, C, and D.
Output Requirements
Answer Selection: Analyze the question and determine the correct answer based on general knowledge. \
Output the selected answer in the format: Answer: X (where X is A, B, C, or D).
Image Generation: Generate an image that visually represents the content of the chosen answer."""

IEE = """You are an AI-powered image editing assistant. Your task is to modify a provided initial image based on \
a question instruction and generate a clear visual description of the edited object.
Input Data
Question: A natural language instruction specifying how the image should be modified.
Initial Image: The original image that needs editing.
Output Requirements
Explanation: Identify the target object or region in the image that needs to be modified. Provide a concise \
visual description of the object before and after modification. Clearly describe how the edit integrates into \
the scene.
Edited Image: Generate an image that precisely follows the question instruction while ensuring realism and \
coherence. Maintain the original image's quality, lighting, and perspective in the edited version.
Output format: Explanation: <your explanation>, then the edited image."""

SD = """You are an AI system designed to analyze two similar images (img_a and img_b) and identify the number of \
differences between them. Your task is to:
Compare img_a and img_b to find all differences.
Select the correct answer from the provided multiple-choice options.
Extract the different regions from img_a and place them on a white background of the same size.
Output Format
Answer Selection: Identify the correct number of differences and output the answer in the format: \
Answer: X (where X is A, B, C, or D)
Extracted Difference Image: Identify regions in img_a that differ from img_b. Extract these differing regions \
and place them on a white background of the same size as img_a."""

AL = """You are an AI system designed to solve junior high school geometry problems. Your task is to:
Analyze the given geometry question, image, and multiple-choice answers.
Draw auxiliary lines on the geometric diagram to assist in problem-solving.
Determine the correct answer based on the problem's conditions.
Output Requirements
Answer Selection: Use geometric reasoning to determine the correct answer. Output the selected answer in the \
format: Answer: X (where X is A, B, C, or D).
Image with Auxiliary Lines: Draw necessary auxiliary lines (such as perpendiculars, bisectors, or diagonals) on \
the geometric diagram to facilitate solving. Maintain the original structure of the diagram while highlighting \
the new construction."""

UNIFY_SYSTEM = {"CSQ": CSQ, "IEE": IEE, "SD": SD, "AL": AL}

VCOT = """You are given a grid-based puzzle game map where each grid square can either be a safe square (land) \
or a hole. Your goal is to reach the target while avoiding the holes and using as few moves as possible. You can \
move in four directions: Left, Right, Up, or Down. The grid is {n}×{n}. The top-left cell is (0,0), the top-right \
cell is ({last},0), the bottom-left cell is (0,{last}), and so forth. Rows increase downward, and columns increase \
to the right.
Game Settings:
- The grid map is fully observable.
- The player starts at a designated grid square.
- The goal is located elsewhere on the map.
- Each grid square is either safe (land) or contains a hole (non-safe).
- The player must avoid holes, and moving into a hole results in failure.
- The objective is to guide the player to the goal without falling into holes.
Movement Rules:
- The player can move left, right, up, or down to an adjacent square, provided it is a safe square.
- The player cannot move more than one square at a time.
- Moving outside the edge of the map has no effect. The player stays in the same position.
- Do not fall into holes.
- The player wins by reaching the goal.
Your task:
- Based on the current state of the game, decide the next move for the player.
- Provide the next action: "Left", "Right", "Up", or "Down", and output "Finish" if you think the goal position \
has been reached.
- After selecting the action, specify the coordinates of the player's new location as [x, y].
- Also, output a representation of the grid map after the selected action.
Output Format:
Action: [Your move choice]
Location: [x, y]
Image: [Generated Image]
Here is the Initial grid map:"""


def understanding_prompt(doc: dict) -> str:
    """Question, one choice per line, and the instruction to answer with the option letter."""
    choices = "\n".join(str(c) for c in doc["choice"])
    return f"{doc['question']}\n{choices}\nAnswer with the option's letter from the given choices directly."


def unify_prompt(subtask: str, doc: dict) -> str:
    """The subtask's system prompt, then the item's question and choices."""
    choices = "\n".join(str(c) for c in doc["choice"])
    if subtask == "IEE":
        return f"{IEE}\n\nQuestion: {doc['question']}"
    return f"{UNIFY_SYSTEM[subtask]}\n\nQuestion: {doc['question']}\nChoice:\n{choices}"


def vcot_prompt(doc: dict) -> str:
    """Figure 24 with the item's true grid size substituted."""
    n = int(doc["grid_size"])
    return VCOT.format(n=n, last=n - 1)


# Generation prompts are ours: the paper and the release give none (the items carry ``Text_Prompt`` only).
GENERATION = {
    "FIR": "Reconstruct the given image exactly, preserving every fine-grained detail.",
    "TIE": "Edit the given image according to this instruction: {prompt}",
    "TIG": "Generate an image of: {prompt}",
    "CIVG": "Generate a short video that starts from the given image and shows: {prompt}",
    "TVG": "Generate a short video of: {prompt}",
    "VP": "The given image is the first frame of a video. Generate the video that follows it. {prompt}",
}


def generation_prompt(subtask: str, doc: dict) -> str:
    return GENERATION[subtask].format(prompt=str(doc.get("Text_Prompt", "")).strip()).strip()
