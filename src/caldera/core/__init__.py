"""L0: the object model, quantities, resources and errors. Imports nothing of caldera's above it."""
