"""Reductions and scans, statistics, sorting and selection, numerical calculus."""
