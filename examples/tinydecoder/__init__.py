"""A small TT-NN decoder with a traced generation loop: trace-lint's example project."""
