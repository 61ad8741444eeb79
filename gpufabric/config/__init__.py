"""Switch configurations: the per-device context from the plan, and rendering through templates/."""
