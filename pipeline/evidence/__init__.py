"""Evidence: requirements, the check registry, artifact records, trace matrix, packages."""
