"""Evidence: the trace matrix, its reports and pages, JUnit, the packages, the nightly merge, `doit verify`.

The steps do not call into this package: they declare their checks with
`pipeline.ledger.checks.register_check`, write `CheckResult`s with
`pipeline.ledger.checks.results_document` and record their artifacts with
`pipeline.ledger.records.record_step` (the ledger, below the steps). Everything here reads
what they left under artifacts/ and judges it: `matrix` (the coverage rules), `gaps` (one
finding per requirement, model and check), the renderers (`render_html`, `render_model`,
`codepages`, `render_text`, `junit`, `summary`), `package`, `merge`, `regression` and the doit
tasks. See docs/evidence.md.
"""
