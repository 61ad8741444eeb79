"""Offline proof of rendered configs: parse each platform's files back into facts and compare with the plan."""
