"""Helpers shared by test modules: plain functions and constants, imported where used (fixtures stay in
conftest)."""
