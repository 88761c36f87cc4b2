"""Diagnosis: bands, bimodality, tail dominance, episodes, stragglers."""
