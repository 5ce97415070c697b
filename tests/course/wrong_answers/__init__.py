"""Plausible wrong solutions, written for the purpose: the suite shows each failing with its finding."""
