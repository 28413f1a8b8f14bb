"""Concurrency control: the in-process TreeLock and the cross-node coordinator."""
