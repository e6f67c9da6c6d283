"""Training: task corpora, supervised and RL fine-tuning driven by validator rewards."""
