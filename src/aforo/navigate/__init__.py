"""Finding one's way in a workspace for the model: the symbol index, the repository map, the pre-search."""
