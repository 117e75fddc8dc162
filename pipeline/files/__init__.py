"""Files and the guards every reader and writer goes through, below every step.

Reading: a file from a user-given folder is opened without following a link and with a size
bound (`readguard`), YAML is judged from its event stream before anything is built
(`yamlguard`), a document is validated against its JSON Schema under pipeline/schemas/
(`schema`, with the compiled fast acceptance `schema_accept`), and bulk object construction
runs with the cyclic garbage collector paused (`gcpause`). Writing: atomically, through a
temporary file and a rename (`atomic`), under names from the one name grammar and confined
to their folder (`names`). They import no step.
"""
