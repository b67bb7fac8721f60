"""Model adapters: one class per model, implementing only primitives (see docs/adding_a_model.md)."""
