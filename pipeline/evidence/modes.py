"""The two evidence modes (docs/evidence.md, "Modes").

`development`: requirements verified only on the target are listed as open, not failed.
`strict`: the certification run on the target; every requirement must be verified on its
platform. Named apart from the matrix so the doit task module can read them cheaply.
"""

DEVELOPMENT, STRICT = "development", "strict"
MODES: tuple[str, ...] = (DEVELOPMENT, STRICT)
