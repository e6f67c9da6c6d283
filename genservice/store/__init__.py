"""Persistent state: SQL models and migrations (SQLite or PostgreSQL), and the asset files."""
