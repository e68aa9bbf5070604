"""Course tools built on the pipeline: generate, corpus, stock comparison, check."""
