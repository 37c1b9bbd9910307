"""Thinc layers of the spaCy side: biLM wrapper, Doc -> layers, scalar mix, listener."""
