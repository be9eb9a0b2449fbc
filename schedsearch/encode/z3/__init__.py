"""Z3 backend: integer start times, exact memory sums, bisection on the makespan."""
