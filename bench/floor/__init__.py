"""The stack-floor benchmark's Django side (``bench/stack_floor.py``): settings that import the
project's own and swap in a URLconf with a few trivial endpoints ahead of the site's routes."""
