"""The execute step's name, its per-deployment result file and its noise seeds.

Named here so `pipeline.execute.tasks` can declare targets without importing the step
(which loads the code generators and NumPy) on every `doit` start.
"""

STEP = "execute"
RUN_FILE = "run.json"
NOISE_SEEDS = (1, 2)  # traces are also taken with the timing noise of these seeds
