"""The shipped presets and experiments, read with :mod:`importlib.resources`.

``presets/machines/*.toml``, ``presets/kernels/*.toml`` and
``experiments/*.toml``. Lookup order, user directories first:
``mmtwin.config.presets_dirs`` and ``mmtwin.config.experiments_dirs``
(docs/cli.md, "Where presets are looked up").
"""
