"""doit tasks: the table of contents of the pipeline.

`doit verify` runs the whole chain for every model under models/. Each step's tasks are
defined in `pipeline/<step>/tasks.py` (explicit file_dep and targets, one library call
each) and imported here by name; the logic lives in `pipeline/`. Every task creator named
here gets its code and tools as dependencies (pipeline/ledger/dependencies.py): the files of
its module's import closure, the identities of the programs and libraries they use. `doit verify strict=1` is
the certification run on the target (docs/evidence.md, "Modes").
"""

import os
import sys

from doit import get_var

from pipeline.project import tasklog
from pipeline.diagnostics import PipelineError
from pipeline.project.layout import check_output_folders
from pipeline.project.lock import hold_project_lock
from pipeline.project.progress import ProgressReporter
from pipeline.project.tasking import ContentChecker, announce_refusals
from pipeline.ledger.dependencies import code_dependencies

try:  # one doit run per project folder (pipeline/project/lock.py); a linked artifacts/ or reports/ refused before any step
    hold_project_lock(".")
    check_output_folders(".")
except PipelineError as _error:
    from pipeline.terminal import render_error

    sys.stderr.write(render_error(_error) + "\n")
    sys.exit(2)

# The steps' log records: warnings on the console, INFO there with `doit verify log=info`, every
# INFO record in .doit.log (pipeline/project/tasklog.py).
tasklog.configure(".", tasklog.console_level(get_var("log", "")))

# A model folder doit cannot run (no deploy.yaml, an invalid one, a name outside the grammar) is
# refused here, one line each; the other models run and `doit verify` fails naming it.
announce_refusals(".")

DOIT_CONFIG = {
    "default_tasks": ["verify"],
    "backend": "json",
    "dep_file": ".doit.db",
    "verbosity": 2,
    # one line per finished task with its time and verdicts, notices while tasks run long, the
    # time per step at the end (pipeline/project/progress.py); `doit --reporter=console` for doit's own
    "reporter": ProgressReporter,
    "check_file_uptodate": ContentChecker,  # catches same-size edits that restore the mtime
    # Tasks run on every core (forked worker processes; `doit -n 1 verify` runs them one by one);
    # timing campaigns wait until no other task is at work (pipeline/project/lock.py `measuring`).
    "num_process": len(os.sched_getaffinity(0)),
}

from pipeline.export.tasks import task_export  # noqa: E402,F401
from pipeline.check.tasks import task_check  # noqa: E402,F401
from pipeline.split.tasks import task_split  # noqa: E402,F401
from pipeline.petri.tasks import task_petri  # noqa: E402,F401
from pipeline.codegen.tasks import task_codegen  # noqa: E402,F401
from pipeline.execute.tasks import task_execute  # noqa: E402,F401
from pipeline.compare.tasks import task_compare  # noqa: E402,F401
from pipeline.evidence.tasks import evidence_tasks  # noqa: E402

task_evidence, task_verify = evidence_tasks(after=("export", "check", "split", "petri", "codegen", "execute", "compare"))

# Last: each task creator above depends on its code and tools, computed, never listed (a new step included).
globals().update(code_dependencies(globals()))
