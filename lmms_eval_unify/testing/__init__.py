"""Stand-ins shipped with the package for tests and benches: a local OpenAI-compatible server (which `judge serve`
also runs the reference judges on), synthetic runs and the released DreamSim reference."""
