"""UniG2U prompts: Direct (paper Appendix G, upstream task code where G is silent) and GtA (Appendix H).

``direct_prompt(subtask, doc)`` returns the Direct prompt and ``gta_prompt(subtask, doc)`` the GtA
``[GEN_PROMPT]stage-1[/GEN_PROMPT][QUESTION]stage-2[/QUESTION]`` string the core protocol splits.
Maze, sliding and jigsaw prompts are the shared puzzle tasks' (``tasks/puzzles``), not repeated here.
"""

from __future__ import annotations

from lmms_eval_unify.benchmarks.unig2u.spec import SUBTASKS

SCENES = (
    "Ocean, Origami, Forest, Cloud, Sand_dune, Medieval_Village, City, Underwater_ruins, Museum, "
    "Bazaar_market, Time_square"
)
SHAPES = {
    "icon": "Animal, Face_Emoji, Music, Sport, Stationery, Vehicle",
    "logo": "Adidas, Amazon, Apple, Audi, BMW, Mercedes Benz, Facebook, Google, Instagram, Mcdonalds, Nasa, "
    "Nike, Olympics, Playstation, Puma, Reebok, Spotify, Starbucks, Tesla, Telegram, Ubuntu",
    "in": "Airplane, Bicycle, Bird, Bottle, Car, Cat, Dog, Dolphin, Fork, Guitar, Mug, Panda, Paper_clip, "
    "Sailboat, Scooter, Teapot",
}


def illusion_candidates(subset: str) -> list[str]:
    """Every class name the IllusionBench prompt offers (shapes of the subset, then the 11 scenes)."""
    return [c.strip() for c in f"{SHAPES[subset]}, {SCENES}".split(",")]


# --- MMSI-Bench (G.1 / H.1) ----------------------------------------------------------------------
_MMSI_APPEARANCE = (
    "Pay close attention to the visual appearance attributes (color, shape, texture, orientation, count, visual "
    "features) in the images. Observe details carefully to identify and count objects.\n\n"
)
_MMSI_MOTION = (
    "Analyze the consecutive first-person perspective images. Determine how the camera (viewpoint) is moving or "
    "rotating by observing changes in the scene and object positions relative to the viewer.\n\n"
)
_POST = "\n\nBased on {basis}, answer with the option's letter from the given choices directly. Enclose the option's letter within ``."  # noqa: E501
MMSI_DIRECT = {
    "attr_appr": (_MMSI_APPEARANCE, "your visual observation"),
    "attr_meas": (_MMSI_APPEARANCE, "your visual observation"),
    "msr": (_MMSI_APPEARANCE, "your visual observation"),
    "motion_cam": (_MMSI_MOTION, "your analysis of camera motion"),
    "motion_obj": (_MMSI_MOTION, "your analysis of camera motion"),
}
MMSI_GTA = {
    "attr_appr": (
        "Create a visualization that highlights and labels the visual appearance attributes (color, shape, texture, "
        "orientation, count) in the scene. Use annotations, bounding boxes, and labels to make object features and "
        "counts clearly visible.",
        "You are given the original image(s) and a visualization highlighting appearance attributes. Use both to "
        "analyze color, shape, texture, orientation, and object counts.\n\n",
        "your visual observation",
    ),
    "attr_meas": (
        "Create a visualization that highlights and annotates the measurable attributes (size, length, width, "
        "height, distance, area, volume) in the scene. Draw measurement lines, labels, and comparison markers to "
        "make quantitative relationships clear.",
        "You are given the original image(s) and a visualization highlighting measurable attributes. Use both to "
        "analyze size, length, width, height, distance, area, and volume relationships.\n\n",
        "your measurement analysis",
    ),
    "motion_cam": (
        "Create a visualization showing camera motion analysis. Draw arrows indicating the direction of camera "
        "movement/rotation, highlight reference points that shift between frames, and annotate the type of camera "
        "motion (pan, tilt, zoom, dolly, etc.).",
        "You are given consecutive first-person perspective images and a visualization of camera motion. Use both "
        "to determine how the camera (viewpoint) is moving or rotating.\n\n",
        "your analysis of camera motion",
    ),
    "motion_obj": (
        "Create a visualization showing object motion tracking. Draw motion trails, arrows indicating direction of "
        "movement, and highlight moving objects with bounding boxes. Annotate relative speeds and trajectories of "
        "different objects.",
        "You are given consecutive images and a visualization of object motion. Use both to track objects, identify "
        "which are moving, their direction, and relative speeds.\n\n",
        "your analysis of object motion",
    ),
    "msr": (
        "Create a visualization that breaks down the multi-step reasoning process. Annotate spatial relationships, "
        "object positions, and key changes across images. Draw diagrams showing logical connections and "
        "intermediate reasoning steps.",
        "You are given the original images and a visualization breaking down the reasoning steps. Use both to "
        "analyze spatial relationships, object positions, and changes across images.\n\n",
        "your multi-step reasoning",
    ),
}

# --- IllusionBench (G.2 / H.2) -------------------------------------------------------------------
_ILLUSION_TARGET = {"icon": ("icon", "icon"), "logo": ("logo", "logo"), "in": ("shape", "icon")}


def _illusion_question(subset: str, question: str, article: str = "a") -> str:
    """Appendix G.2 prompt; the shape prompts say "a icon" in G (Direct) and "an icon" in H (GtA)."""
    options = f"{SHAPES[subset]},{SCENES}"
    if question == "scene":
        return (
            "This image contains an icon integrated into a background, where elements of the background contribute "
            "to forming the icon. Identify the background that is represented in the image by choosing exclusively "
            f"among the following options:{options}. Provide your response by stating only the single, most "
            "accurate class name that represents the background. You have to respond with a single word."
        )
    target, represents = _ILLUSION_TARGET[subset]
    forming = "logo" if subset == "logo" else "icon"
    return (
        f"This image contains {article} icon integrated into a background, where elements of the background "
        f"contribute to forming the {forming}. Identify the {target} that is represented in the image by choosing "
        "exclusively "
        f"among the following options:{options} Provide your response by stating only the single, most accurate "
        f"class name that represents the {represents}. You have to respond with a single word."
    )


def _illusion_gta(subset: str, question: str) -> tuple[str, str]:
    if question == "scene":
        return (
            "Create a visualization that highlights the background scene elements. Draw annotations identifying key "
            "features of the environment, landscape, or setting that characterize the scene type.",
            "You are given the original image and a visualization highlighting the background scene elements. Use "
            "both to identify the scene type.\n\n",
        )
    noun = {"icon": "icon", "logo": "logo", "in": "shape"}[subset]
    formed = {"icon": "icon shape", "logo": "logo shape", "in": "shape"}[subset]
    stage2 = {
        "icon": "highlighting how background elements form the icon. Use both to identify the icon shape.",
        "logo": "highlighting how background elements form the logo. Use both to identify the logo.",
        "in": "highlighting how background elements form the shape. Use both to identify the shape.",
    }[subset]
    return (
        f"Create a visualization that highlights how the background elements contribute to forming the {formed}. "
        f"Draw outlines, arrows, and annotations showing which parts of the scene create the {noun}'s silhouette "
        "or features.",
        f"You are given the original image and a visualization {stage2}\n\n",
    )


# --- VisualPuzzles (G.3 / H.3) -------------------------------------------------------------------
VP_DIRECT_INSTRUCTION = "Answer the question with the option's letter from the given choices directly."


def visual_puzzles_question(doc: dict) -> str:
    """``Question: …`` plus the options (or the pointer to options drawn in the image)."""
    text = "Question: " + str(doc["question"]).strip()
    options = doc.get("options")
    if options is not None and len(options) >= 4:
        text += "\nOptions:" + "".join(f"\n({label}) {option}" for label, option in zip("ABCD", options, strict=False))
    else:
        text += "\nOptions: Choose from (A) (B) (C) (D) in the image."
    return text


_VP_STAGE2 = (
    "{question}\n\nYou are given TWO images:\n1) ORIGINAL PUZZLE: {original}\n2) AUXILIARY DIAGRAM: {auxiliary}\n\n"
    "{use}\nAnswer with the option letter (A, B, C, or D) directly."
)
VP_GTA = {
    "analogical": (
        "You are given an analogical reasoning puzzle (A is to B as C is to ?).\n\n{question}\n\nYour task:\n"
        "1. Identify the transformation or relationship from A to B\n2. Create a diagram that clearly shows:\n"
        "   - The key features that change from A to B\n   - The transformation rule (rotation, color change, shape "
        "modification, etc.)\n   - How the same rule applies to C\n   - Annotations or arrows showing the "
        "transformation steps\n3. Make the transformation pattern visually obvious\n\nGenerate a diagram that "
        "reveals the transformation pattern between pairs.",
        "The analogical reasoning puzzle",
        "A visualization showing the transformation relationship",
        "Use the auxiliary diagram to understand how A transforms to B, apply the same rule to C, then select the "
        "correct answer.",
    ),
    "deductive": (
        "You are given a deductive reasoning puzzle that requires logical inference.\n\n{question}\n\nYour task:\n"
        "1. Identify the given premises, rules, or constraints in the puzzle\n2. Create a diagram that clearly "
        "shows:\n   - All given conditions/rules listed clearly\n   - A logical flowchart or inference chain\n"
        "   - Step-by-step deduction from premises to conclusion\n   - Elimination of incorrect possibilities\n"
        "   - The logical path leading to the answer\n3. Use arrows to show the deduction flow\n\nGenerate a logical "
        "inference diagram that traces the reasoning path.",
        "The deductive reasoning puzzle",
        "A logical inference diagram showing the deduction steps",
        "Follow the logical chain in the auxiliary diagram to reach the conclusion, then select the correct answer.",
    ),
    "inductive": (
        "You are given an inductive reasoning puzzle that requires pattern recognition.\n\n{question}\n\nYour task:\n"
        "1. Observe the sequence of examples and identify the underlying pattern\n2. Create a diagram that clearly "
        "shows:\n   - The repeating elements or motifs highlighted/circled\n   - The progression rule (what changes "
        "from one step to the next)\n   - Annotations showing the pattern cycle or growth rule\n   - A prediction "
        "of what comes next based on the pattern\n   - Color-coding or numbering to show pattern repetition\n"
        "3. Make the inductive pattern visually obvious\n\nGenerate a diagram that highlights the repeating pattern "
        "and predicts the next element.",
        "The inductive reasoning puzzle",
        "A visualization highlighting the pattern and its progression",
        "Use the auxiliary diagram to identify the pattern, then select the correct answer.",
    ),
    "spatial": (
        "You are given a spatial reasoning puzzle involving 3D visualization or transformations.\n\n{question}\n\n"
        "Your task:\n1. Analyze the spatial transformation required (rotation, folding, unfolding, different "
        "viewpoint)\n2. Create a diagram that clearly shows:\n   - The object from multiple angles if rotation is "
        "involved\n   - Step-by-step folding/unfolding process if applicable\n   - Arrows indicating rotation "
        "direction and degree\n   - Reference points or markers to track orientation\n   - The resulting shape "
        "after transformation\n3. Add axis lines or reference frames to clarify spatial orientation\n\nGenerate a "
        "multi-view or step-by-step transformation diagram.",
        "The spatial reasoning puzzle",
        "A visualization showing the spatial transformation from multiple views",
        "Use the auxiliary diagram to mentally trace the transformation, then select the correct answer.",
    ),
}
VP_ALGORITHMIC_GEN = (
    "Create a visualization that breaks down the algorithmic pattern or sequence. Draw step-by-step diagrams, "
    "number sequences, or flowcharts showing the logical progression and rules governing the pattern."
)
VP_ALGORITHMIC_PRE = (
    "You are given the original puzzle image(s) and a visualization breaking down the algorithmic pattern. Use both "
    "to identify the underlying algorithm or sequence rule.\n\n"
)

# --- ChartQA (upstream Direct; H.4) --------------------------------------------------------------
CHARTQA_GEN = (
    "Based on this chart and the question being asked, generate an annotated version of the chart that highlights "
    "the relevant data points, bars, lines, or regions needed to answer the question. Mark or circle the key values "
    "and label them clearly."
)
CHARTQA_GTA_PRE = (
    "In addition to the original chart, you are also given an annotated version that highlights the relevant data "
    "points for the question.\n\n"
)

# --- RealUnify (prompt field; H.7) ---------------------------------------------------------------
REALUNIFY_GTA = {
    "mental_track": (
        "Here is the question: {question}\nPlease apply the corresponding transformations and modifications to the "
        "contents of the image according to the question.",
        "In addition to the original image, you are also given a transformed version of the image with the "
        "modifications applied according to the question.",
    ),
    "mental_recon": (
        "Please restore the image that has been shuffled by patches, without adding extra content or altering the "
        "original image.",
        "In addition to the original image, you are also given a restored version of the shuffled image to help you "
        "answer the question.",
    ),
    "attn_focus": (
        "Here is the question: {question}\nPlease highlight the regions of the image that are relevant to the "
        "question.",
        "In addition to the original image, you are also given a visualization that highlights the regions relevant "
        "to the question.",
    ),
}

# --- VSP (H.8; the Direct prompt is the same without the auxiliary-image sentence) ---------------
VSP_GMAP = """As a professional pathfinder, your task is to analyze a map and find a route from the starting location to the goal. Since coding is not within your skill set, your approach relies on logical reasoning of the map.

## Game Setup
- The game presents a fully observable map.
- The starting location is marked with blue "S", and the goal is marked with red "G".
- Your goal is to find a path from the starting location to the goal.

## Moving Rules
- The action plan involves moves in four directions: 'W' (West), 'E' (east), 'N' (north), or 'S' (south).
- Each move is along with distances. Distances are measured by how many crossroads passed.
We provide an example to further illustrate the rules.

[Example Image]

In this provided example:
- You are now at the southwest of the goal.
- If you move north by 1 crossroad, you will be at the west of the goal.
- If you move east by 4 crossroads, you will be at the goal.
- IMPORTANT: Please ignore the name of the street and avenue. The numbers in the name cannot be used to compute how many crossroads need to be passed.

## Procedure and Output
Now you will solve the given maze. To analyze the relative spatial relation between the starting point and the goal (for example, southwest). Then, output a path using the format <Direction>: <Number of crossroads passed>.
For example:
<Output>
1. North: 1
2. East: 4
means move north by 1 crossroad, and move east by 4 crossroads.
<Output>
1. South: 1
means move south by 1 crossroad.
Do not output any extra content after the above aggregated output.

Please output path for the following map:

[Test Image]"""  # noqa: E501
VSP_COLLISION = """As a professional navigation agent, your task is to analyze a map and determine the time needed for the car and the person passing the goal.

## Game Setup
- The game presents a fully observable map. There is a person, a car, and a goal on the map.
- The game further specifies the moving direction of the person and car ("up", "down", "left", "right").
- Your goal is to determine the time needed for the car and the person passing the goal.
The following figure shows how the player, the car, and the goals look like.

[Icon Image]

We provide an example to further illustrate the rules.

[Example Image]

The car is moving left with speed 1.0 grid per second, and the person is moving up with speed 0.5 grid per second.

In this provided example:
- The car is 2 grid away from the goal. Given it's time as 1.0 grid per second, the time needed is 2 / 1.0 = 2 seconds.
- The person is 1 grid away from the goal. Given it's time as 0.5 grid per second, the time needed is 1 / 0.5 = 2 seconds.

## Procedure and Output
Now you will answer for the following given map. To solve it, analyze the car and the person separately. Then, answer for them separately.
For example:
Car: 2.0
Person: 2.0
means car and the person will need 2.0 seconds to pass the goal respectively.
Do not output any extra content after the above aggregated output.

Please analyze and determine the time needed for the car and the person passing the goal:

[Test Image]

The car is moving {car_dir} with speed {car_speed}, and the person is moving {person_dir} with speed {person_speed}."""  # noqa: E501
VSP_GTA = {
    "gmap": (
        "This image shows a map with a starting point marked 'S' (blue) and a goal marked 'G' (red). Your task: "
        "Generate a clear visualization that highlights the optimal path from S to G. Draw a simplified map showing "
        "the route with arrows indicating directions (North, South, East, West) and mark the number of crossroads "
        "to pass in each direction.",
        "In addition to the original images, you are also given an auxiliary visualization image showing the path "
        "analysis.\n\n",
    ),
    "collision": (
        "This image shows a map with a car, a person, and a goal. Your task: Generate a clear visualization that "
        "analyzes the distances and paths. Draw a simplified diagram showing the grid distances from the car to the "
        "goal and from the person to the goal, with arrows indicating their movement directions.",
        "In addition to the original images, you are also given an auxiliary visualization image showing the "
        "distance analysis.\n\n",
    ),
}


# --- Geometry3K / AuxSolidMath (released task code Direct; H.5) ------------------------------------
GEOMETRY3K_DIRECT = (
    "{problem}\n\nInstructions:\n1. Carefully analyze the geometry diagram shown above.\n2. Read the problem "
    "statement and identify what needs to be found.\n3. Show your step-by-step solution with clear reasoning.\n"
    "4. Include all intermediate calculations.\n5. State the final answer clearly at the end.\n\nPlease solve this "
    "problem step by step."
)
GEOMETRY3K_GEN = (
    "Based on this geometry problem, generate an auxiliary diagram that adds helpful constructions to solve the "
    "problem.\n\nYour task:\n1. Analyze what geometric relationships need to be proven or calculated\n2. Add "
    "auxiliary lines, points, or constructions that reveal these relationships\n3. Label any new points, angles, "
    "or segments clearly\n4. Highlight key geometric properties (parallel lines, congruent segments, equal "
    "angles, etc.)\n\nGenerate a diagram with auxiliary constructions that make the solution path clearer."
)
GEOMETRY3K_GTA = (
    "You are given TWO images:\n1) ORIGINAL DIAGRAM: The geometry problem diagram\n2) AUXILIARY DIAGRAM: The same "
    "diagram with helpful auxiliary constructions added\n\nUse both diagrams to solve the problem. The auxiliary "
    "constructions should help you identify key relationships.\n\n{problem}"
)
AUXSOLIDMATH_DIRECT = (
    "You are given a solid geometry problem with a 3D diagram.\n\nProblem: {question}\n\nInstructions:\n"
    "1. First, carefully analyze the 3D diagram and identify what auxiliary lines (辅助线) need to be drawn to "
    "solve this problem. Common auxiliary constructions in solid geometry include:\n"
    "   - Connecting points to form line segments\n   - Drawing perpendiculars from a point to a plane or line\n"
    "   - Finding midpoints and connecting them\n   - Extending lines to find intersections\n"
    "   - Drawing parallel lines through specific points\n   - Constructing cross-sections\n\n"
    "2. Clearly state which auxiliary lines you will draw and why they are helpful. For example:\n"
    '   - "Connect point A to point B to form segment AB"\n'
    '   - "Draw a perpendicular from point P to plane ABC, with foot H"\n'
    '   - "Take the midpoint M of edge AB, connect M to C"\n'
    '   - "Extend line DE to intersect plane ABC at point F"\n\n'
    "3. After describing the auxiliary lines, provide a step-by-step solution using these auxiliary "
    "constructions.\n\n4. Show all intermediate calculations and reasoning, including:\n"
    "   - Distance calculations\n   - Angle calculations\n   - Volume/area calculations if needed\n\n"
    "5. State the final answer clearly.\n\nPlease think step by step, starting with the auxiliary line "
    "construction."
)
AUXSOLIDMATH_GEN = (
    "You are given a solid geometry problem with a 3D diagram. Analyze the problem and create an enhanced version "
    "of the SAME diagram with auxiliary constructions added.\n\nProblem: {question}\n\nInstructions:\n1. KEEP all "
    "original elements exactly as they are (all points, edges, faces, labels)\n2. Analyze what auxiliary "
    "constructions would help solve this problem\n3. ADD auxiliary lines in a different color (e.g., red or dashed "
    "lines). Common auxiliary constructions include:\n   - Perpendiculars from a point to a plane or line\n"
    "   - Line segments connecting specific points\n   - Midpoints of edges with connections\n   - Extended lines "
    "to find intersections\n   - Parallel lines through specific points\n   - Cross-sections of the solid\n"
    "4. Label any new points you add (use letters not already in the diagram)\n5. The final diagram should look "
    "like the original 3D figure with extra auxiliary lines drawn on top\n\nGenerate an enhanced 3D diagram that "
    "preserves the original and adds helpful auxiliary constructions."
)
AUXSOLIDMATH_GTA = (
    "You are given a solid geometry problem.\n\nProblem: {question}\n\nYou are given TWO images:\n1) ORIGINAL "
    "DIAGRAM: The 3D solid geometry figure as given\n2) AUXILIARY DIAGRAM: The same figure with auxiliary "
    "constructions (extra lines) added to help solve the problem\n\nInstructions:\n1. Look at the auxiliary diagram "
    "to see what constructions were added (perpendiculars, connecting segments, midpoints, etc.)\n2. Identify the "
    "geometric relationships established by these auxiliary lines\n3. Use these constructions to set up your "
    "solution approach\n4. Apply relevant theorems (Pythagorean theorem in 3D, properties of perpendiculars, volume "
    "formulas, etc.)\n5. Show your step-by-step solution with clear calculations\n6. State the final numerical "
    "answer\n\nSolve this problem step by step using the auxiliary constructions."
)

# --- PhyX (the question alone; H.6) --------------------------------------------------------------
PHYX_GTA = {
    "light": (
        "Based on this optics problem, draw a light ray diagram that helps solve the problem. Show the path of light "
        "rays through the optical system, including incident rays, reflected rays, refracted rays, focal points, and "
        "any relevant angles or focal points as needed by the problem.",
        "In addition to the original image, you are also given an auxiliary light ray diagram to help you solve the "
        "problem.\n\n",
    ),
    "mechanism": (
        "Based on this mechanics problem, draw a free body diagram (force analysis diagram) that helps solve the "
        "problem. Show all the forces acting on the object(s), including gravity, normal force, friction, tension, "
        "applied forces, etc., with arrows indicating direction and relative magnitude.",
        "In addition to the original image, you are also given an auxiliary free body diagram (force analysis "
        "diagram) to help you solve the problem.\n\n",
    ),
}

# --- BabyVision (released task code Direct; H.9) -------------------------------------------------
BABYVISION_POST = "\n\nThink step by step and give your final answer in \\boxed{Answer} format."
BABYVISION_GEN = {
    "fine_discrim": "This image contains subtle visual details that need careful examination. Your task: Generate a "
    "visualization that highlights and emphasizes the fine-grained details, subtle differences, and distinguishing "
    "features in the image. Make the key discriminative elements more prominent and easier to identify.",
    "visual_track": "This image involves tracking objects or their movements. Your task: Generate a visualization "
    "that highlights the objects of interest, their positions, trajectories, or movement patterns. Make it easier "
    "to follow and track the relevant visual elements.",
}
BABYVISION_GTA_PRE = (
    "In addition to the original image, you are also given an auxiliary visualization image that highlights key "
    "visual elements.\n\n"
)


def babyvision_is_choice(doc: dict) -> bool:
    return doc.get("ansType") == "choice" and doc.get("options") is not None and len(doc["options"]) > 0


def babyvision_question(doc: dict) -> str:
    """The question, plus ``Choices:`` with ``(A) …`` lines for a choice item."""
    question = str(doc["question"]).strip()
    if babyvision_is_choice(doc):
        question += "\nChoices:\n" + "\n".join(f"({chr(65 + i)}) {o}" for i, o in enumerate(doc["options"]))
    return question


def vsp_kind(doc: dict) -> str:
    """``collision`` for collision items (they carry ``car_dir``), else ``gmap``."""
    return "collision" if doc.get("car_dir") is not None else "gmap"


def _gta(gen_prompt: str, question: str) -> str:
    return f"[GEN_PROMPT]{gen_prompt}[/GEN_PROMPT][QUESTION]{question}[/QUESTION]"


def direct_prompt(subtask: str, doc: dict) -> str:
    """The Direct (non-CoT) prompt of one document."""
    family = SUBTASKS[subtask].family
    if family == "realunify":
        return str(doc.get("evaluation_prompt") or doc["prompt"])
    if family == "vsp":
        return VSP_GMAP if vsp_kind(doc) == "gmap" else VSP_COLLISION.format(**doc)
    if family == "chartqa":
        return f"{doc['question']}\nAnswer the question with a single word."
    if family == "mmsi":
        pre, basis = MMSI_DIRECT[subtask]
        return pre + str(doc["question"]) + _POST.format(basis=basis)
    if family == "illusion":
        subset, question = subtask.rsplit("_", 1)
        return _illusion_question(subset, question)
    if family == "visual_puzzles":
        return visual_puzzles_question(doc) + "\n" + VP_DIRECT_INSTRUCTION
    if family == "geometry3k":
        return GEOMETRY3K_DIRECT.format(problem=doc["problem"])
    if family == "auxsolidmath":
        return AUXSOLIDMATH_DIRECT.format(question=doc["question"])
    if family == "phyx":
        return str(doc["question"])
    if family == "babyvision":
        return babyvision_question(doc) + BABYVISION_POST
    raise KeyError(f"no Direct prompt for {subtask!r}")


def gta_prompt(subtask: str, doc: dict) -> str:
    """The GtA prompt of one document (stage-1 generation prompt and stage-2 question, tagged)."""
    family = SUBTASKS[subtask].family
    if family == "realunify":
        gen, pre = REALUNIFY_GTA[subtask]
        return _gta(gen.format(question=doc.get("question", "")), f"{pre}\n\n{direct_prompt(subtask, doc)}")
    if family == "vsp":
        gen, pre = VSP_GTA[vsp_kind(doc)]
        return _gta(gen, pre + direct_prompt(subtask, doc))
    if family == "chartqa":
        return _gta(CHARTQA_GEN, CHARTQA_GTA_PRE + direct_prompt(subtask, doc))
    if family == "mmsi":
        gen, pre, basis = MMSI_GTA[subtask]
        return _gta(gen, pre + str(doc["question"]) + _POST.format(basis=basis))
    if family == "illusion":
        subset, question = subtask.rsplit("_", 1)
        gen, pre = _illusion_gta(subset, question)
        return _gta(gen, pre + _illusion_question(subset, question, article="an"))
    if family == "visual_puzzles":
        question = visual_puzzles_question(doc)
        if subtask == "algorithmic":
            return _gta(VP_ALGORITHMIC_GEN, f"{VP_ALGORITHMIC_PRE}{question}\n{VP_DIRECT_INSTRUCTION}")
        gen, original, auxiliary, use = VP_GTA[subtask]
        stage2 = _VP_STAGE2.format(question=question, original=original, auxiliary=auxiliary, use=use)
        return _gta(gen.format(question=question), stage2)
    if family == "geometry3k":
        return _gta(GEOMETRY3K_GEN, GEOMETRY3K_GTA.format(problem=doc["problem"]))
    if family == "auxsolidmath":
        return _gta(
            AUXSOLIDMATH_GEN.format(question=doc["question"]),
            AUXSOLIDMATH_GTA.format(question=doc["question"]),
        )
    if family == "phyx":
        gen, pre = PHYX_GTA[subtask]
        return _gta(gen, pre + str(doc["question"]))
    if family == "babyvision":
        return _gta(BABYVISION_GEN[subtask], BABYVISION_GTA_PRE + babyvision_question(doc) + BABYVISION_POST)
    raise KeyError(f"no GtA prompt for {subtask!r}")
