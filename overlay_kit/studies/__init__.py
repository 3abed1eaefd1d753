"""The studies: simulators and analyses over the pipeline. Each study's `run(...)` returns a result with
`.table()` and `.finding()`; notebooks only call it.

Sits above the pipeline (and may use the model client); nothing in the core imports it."""
