"""spacy-elmo: ELMo contextual word vectors (Peters et al. 2018) for spaCy v3."""
__version__ = "0.1.0"
