"""Isolation between the principals one runtime serves: users, agents and sessions.

Each module attacks one surface with the cast of :mod:`._cast` -- two users, two agents
(one restricted), main, worker and branch sessions -- through the doors a host uses.
"""
