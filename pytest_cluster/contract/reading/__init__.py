"""How the spec's text is read: YAML composed within bounds (`compose`), a scalar as the spec
wrote it (`yaml_nodes`), errors collected with their place (`located_errors`), did-you-mean
(`spelling`), a mapping key by key (`mapping`), scalar fields and clauses parsed as declared
(`fields`, `clause_parsers`); and our own records read back from their JSON (`documents`)."""
