"""Demonstrations and their checker: the race demo (`gravimeta demo race`) and the history checker
that the demo and the chaos tests share."""
