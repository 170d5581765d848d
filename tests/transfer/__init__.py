"""Copies from the official savers and stores, and between ours, lose nothing and resume."""
