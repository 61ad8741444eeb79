"""`nornir push`: candidate, diff, commit with a confirm timer, post-change checks, confirm or roll back,
batch by batch along the plan's failure domains."""
