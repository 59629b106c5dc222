"""tinyattn: a small deep-learning library for attention models."""
