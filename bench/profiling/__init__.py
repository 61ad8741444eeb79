"""Profiling experiments: what one mechanism costs (threads, idle SSH sessions, a py-spy profile)."""
