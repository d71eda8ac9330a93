/* spec.c -- PLACEHOLDER being written */
