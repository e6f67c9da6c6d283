"""Generation: load a local model, format prompts per domain, sample N candidates, rerank."""
