"""Evidence: requirements, the check registry, artifact records, trace matrix, packages.

What other steps call: `checks.register_check` / `checks.CheckResult` /
`checks.results_document` for their verdicts and `records.record_step` for their artifacts.
Everything else (matrix, reports, packages, JUnit, doit tasks) reads what they leave behind.
See docs/evidence.md.
"""
