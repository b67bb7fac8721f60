"""Uni-MMMU core code."""
